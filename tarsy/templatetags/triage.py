"""Template filters for triage values: the words people read for the stored codes."""

from __future__ import annotations

from django import template

from tarsy.models import Resolution, TriageStatus

register = template.Library()
_LABELS = {**dict(Resolution.choices), **dict(TriageStatus.choices)}


@register.filter
def triage_label(value: str) -> str:
    """`false_positive` → `False positive`, `in_progress` → `In progress`; anything else as it is."""
    return _LABELS.get(value, value)
