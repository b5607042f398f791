"""A memory's scope labels and the alert's: which cluster, namespace and service an alert is about."""

from __future__ import annotations

from typing import Any

from agents.alert_labels import alert_labels

LABEL_KEYS = ("cluster", "namespace", "service")  # what a memory may be scoped by besides alert type and chain


def _pick(source: dict[str, Any]) -> dict[str, str]:
    return {k: str(source[k]) for k in LABEL_KEYS if isinstance(source.get(k), (str, int)) and str(source[k])}


def alert_scope(alert_data: str) -> dict[str, str]:
    """Scope labels of an alert, read where its source keeps its labels (agents.alert_labels: a webhook alert's
    `alert.labels`, a JSON alert's `labels` or top-level keys)."""
    return clean_labels(alert_labels(alert_data))


def clean_labels(labels: dict[str, Any]) -> dict[str, str]:
    return _pick({str(k).lower(): v for k, v in labels.items()}) if isinstance(labels, dict) else {}


def in_scope(memory_labels: dict[str, Any], labels: dict[str, str]) -> bool:
    """A memory applies unless the alert names another value for one of its labels."""
    return all(labels.get(key) in (None, str(value)) for key, value in (memory_labels or {}).items())
