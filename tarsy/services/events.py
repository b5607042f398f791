"""Stored events: the rows behind the WebSocket catch-up (the publisher writes them, retention removes them)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db import transaction

from tarsy.models import Event, EventSequence


def events_store(*, rows: list[Event]) -> None:
    """One INSERT for all rows (PostgreSQL and SQLite return the ids the catch-up cursor needs), each row of a
    session channel numbered next on it."""
    with transaction.atomic(savepoint=False):
        _number(rows)
        Event.objects.bulk_create(rows)


def _numbered(row: Event) -> bool:
    return row.session_id is not None and row.channel == f"session:{row.session_id}"


def _number(rows: list[Event]) -> None:
    """Give each session-channel row the next `seq` of its channel. The counters stay locked until commit, so a
    channel's numbers follow commit order; they are locked in one order (by session) to rule out deadlocks
    between two stores of the same sessions."""
    counts = Counter(str(row.session_id) for row in rows if _numbered(row))
    if not counts:
        return
    EventSequence.objects.bulk_create([EventSequence(session_id=s) for s in counts], ignore_conflicts=True)
    counters = list(EventSequence.objects.select_for_update().filter(session_id__in=counts).order_by("session_id"))
    last = {str(counter.session_id): counter.last for counter in counters}
    for row in rows:
        if _numbered(row):
            key = str(row.session_id)
            last[key] += 1
            row.seq = last[key]
    for counter in counters:
        counter.last = last[str(counter.session_id)]
    EventSequence.objects.bulk_update(counters, ["last"])


def events_delete(*, created_before: datetime) -> int:
    """Delete the catch-up events older than the cutoff; returns how many."""
    deleted, _ = Event.objects.filter(created_at__lt=created_before).delete()
    return deleted
