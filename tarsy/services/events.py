"""Stored events: the rows behind the WebSocket catch-up (the publisher writes them, retention removes them)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from django.db import transaction
from django.db.models import F

from tarsy.models import AlertSession, Event


def events_store(*, rows: list[Event]) -> None:
    """Number the session-channel rows (`events_number`), then store all rows in one INSERT (PostgreSQL and
    SQLite return the ids the catch-up cursor needs), in the caller's transaction (or one of their own)."""
    with transaction.atomic(savepoint=False):
        events_number(rows=rows)
        Event.objects.bulk_create(rows)


def events_number(*, rows: list[Event]) -> None:
    """Give the session-channel rows of `rows` their next positions on their channels (`Event.seq`), in order.

    The counter is the session row's `event_seq`, raised in the writing transaction: the row stays locked until
    it commits, so a later writer of the session numbers after it and commits after it. A number n+1 therefore
    exists only once n is committed (a reader that sees a hole knows an event was lost, not still coming), and a
    rollback takes its numbers back with it. Writers of a session's events mostly hold its row already (token
    totals, status, evidence ids); sessions are taken in one order.
    """
    counts = Counter(str(row.session_id) for row in rows if _numbered(row))
    last: dict[str, int] = {}
    for session_id in sorted(counts):
        session = AlertSession.all_objects.filter(pk=session_id)
        session.update(event_seq=F("event_seq") + counts[session_id])
        last[session_id] = session.values_list("event_seq", flat=True).get() - counts[session_id]
    for row in rows:
        if _numbered(row):
            last[str(row.session_id)] += 1
            row.seq = last[str(row.session_id)]


def _numbered(row: Event) -> bool:
    return row.session_id is not None and row.seq is None and row.channel == f"session:{row.session_id}"


def events_delete(*, created_before: datetime) -> int:
    """Delete the catch-up events older than the cutoff; returns how many."""
    deleted, _ = Event.objects.filter(created_at__lt=created_before).delete()
    return deleted
