"""Retention: soft-delete old sessions, hard-delete old catch-up events."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from tarsy.config import get_config
from tarsy.models import TERMINAL_SESSION_STATUSES, AlertSession, Event


def retention_apply() -> dict[str, int]:
    retention = get_config().system.retention
    now = timezone.now()
    soft = AlertSession.objects.filter(
        created_at__lt=now - timedelta(days=retention.session_retention_days), status__in=TERMINAL_SESSION_STATUSES
    ).update(deleted_at=now)
    events, _ = Event.objects.filter(created_at__lt=now - timedelta(seconds=retention.event_ttl)).delete()
    return {"sessions_soft_deleted": soft, "events_deleted": events}
