"""Reading Slack's interaction payloads (button clicks, form submissions): Slack sends JSON whose shape a forged or
truncated request may not have, so every read tolerates a missing or wrong-typed field and what is required is
checked in one place."""

from __future__ import annotations

from typing import Any


class MalformedAction(ValueError):
    """A signed interaction payload without what it must carry: answered 400, nothing changes."""


def field(value: Any, key: str) -> Any:
    """`value[key]` when `value` is an object, else None."""
    return value.get(key) if isinstance(value, dict) else None


def member(payload: dict[str, Any]) -> tuple[str, str]:
    """The Slack member who acted: their id (required) and handle."""
    user = payload.get("user")
    user_id = field(user, "id")
    if not isinstance(user_id, str) or not user_id:
        raise MalformedAction("an interaction carries `user.id`")
    return user_id, str(field(user, "username") or field(user, "name") or "")


def channel_of(payload: dict[str, Any]) -> str:
    """The channel the interaction came from ("" when Slack did not say)."""
    return str(field(payload.get("channel"), "id") or field(payload.get("container"), "channel_id") or "")
