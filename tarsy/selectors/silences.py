"""Silences as the API and the dashboard list them: current first (active, then scheduled), or by state."""

from __future__ import annotations

from django.db.models import Count, QuerySet
from django.utils import timezone

from tarsy.models import Silence

SILENCE_STATES = ("current", "active", "scheduled", "ended", "all")


def silences_list(*, state: str = "current") -> QuerySet:
    """`current`: not ended yet (active or scheduled); each row annotated with how many sessions it silenced."""
    now = timezone.now()
    rows = Silence.objects.annotate(session_count=Count("sessions"))
    if state == "current":
        rows = rows.filter(ends_at__gt=now)
    elif state == "active":
        rows = rows.filter(starts_at__lte=now, ends_at__gt=now)
    elif state == "scheduled":
        rows = rows.filter(starts_at__gt=now, ends_at__gt=now)
    elif state == "ended":
        rows = rows.filter(ends_at__lte=now)
    return rows.order_by("-starts_at", "-id")


def silence_detail(*, silence_id) -> Silence | None:
    return silences_list(state="all").filter(id=silence_id).first()
