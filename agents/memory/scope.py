"""A memory's scope labels and the alert's: which cluster, namespace and service an alert is about."""

from __future__ import annotations

import json
from typing import Any

LABEL_KEYS = ("cluster", "namespace", "service")  # what a memory may be scoped by besides alert type and chain


def _pick(source: dict[str, Any]) -> dict[str, str]:
    return {k: str(source[k]) for k in LABEL_KEYS if isinstance(source.get(k), (str, int)) and str(source[k])}


def alert_labels(alert_data: str) -> dict[str, str]:
    """Scope labels of an alert: its JSON data's `labels` (Alertmanager style), else its top-level keys."""
    try:
        data = json.loads(alert_data)
    except (ValueError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    labels = data.get("labels")
    picked = _pick(labels) if isinstance(labels, dict) else {}
    return {**_pick(data), **picked}


def clean_labels(labels: dict[str, Any]) -> dict[str, str]:
    return _pick({str(k).lower(): v for k, v in labels.items()}) if isinstance(labels, dict) else {}


def in_scope(memory_labels: dict[str, Any], labels: dict[str, str]) -> bool:
    """A memory applies unless the alert names another value for one of its labels."""
    return all(labels.get(key) in (None, str(value)) for key, value in (memory_labels or {}).items())
