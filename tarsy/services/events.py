"""Stored events: the rows behind the WebSocket catch-up (the publisher writes them, retention removes them)."""

from __future__ import annotations

from datetime import datetime

from tarsy.models import Event


def events_store(*, rows: list[Event]) -> None:
    """One INSERT for all rows (PostgreSQL and SQLite return the ids the catch-up cursor needs)."""
    Event.objects.bulk_create(rows)


def events_delete(*, created_before: datetime) -> int:
    """Delete the catch-up events older than the cutoff; returns how many."""
    deleted, _ = Event.objects.filter(created_at__lt=created_before).delete()
    return deleted
