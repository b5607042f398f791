"""Reading settings from the environment: a malformed value names its variable at start-up rather than failing
deep inside a library."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


def env_number(name: str, default: float, kind: type = int) -> float:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return kind(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be {'an integer' if kind is int else 'a number'}, "
                                   f"got {value!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    return default if value is None else [item.strip() for item in value.split(",") if item.strip()]
