"""Stored events: the rows behind the WebSocket catch-up (the publisher writes them, retention removes them)."""

from __future__ import annotations

from datetime import datetime

from tarsy.db.inserts import PreparedInsert, rows_insert
from tarsy.models import Event


def events_store(*, rows: list[Event], with_row: PreparedInsert | None = None) -> None:
    """One INSERT for all rows (PostgreSQL and SQLite return the ids the catch-up cursor needs). `with_row`, the
    prepared INSERT of a new row the events refer to (a session being created), runs with theirs in one round trip."""
    if with_row is None:
        Event.objects.bulk_create(rows)
    else:
        rows_insert(parent=with_row, children=rows)


def events_delete(*, created_before: datetime) -> int:
    """Delete the catch-up events older than the cutoff; returns how many."""
    deleted, _ = Event.objects.filter(created_at__lt=created_before).delete()
    return deleted
