"""Retention: soft-delete old finished sessions, hard-delete old catch-up events (ages from the configuration)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from tarsy.config import get_config
from tarsy.services import events, sessions


def retention_apply() -> dict[str, int]:
    retention = get_config().system.retention
    now = timezone.now()
    soft = sessions.sessions_expire(created_before=now - timedelta(days=retention.session_retention_days), now=now)
    deleted = events.events_delete(created_before=now - timedelta(seconds=retention.event_ttl))
    return {"sessions_soft_deleted": soft, "events_deleted": deleted}
