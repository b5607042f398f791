"""Stored events: the rows behind the WebSocket catch-up (the publisher writes them, retention removes them)."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from tarsy.models import Event, EventSequence


def events_store(*, rows: list[Event]) -> None:
    """One INSERT for all rows (PostgreSQL and SQLite return the ids the catch-up cursor needs)."""
    Event.objects.bulk_create(rows)


def events_number(*, rows: list[Event]) -> None:
    """Number the session-channel events of `rows` on their channels (`Event.seq`), after their commit.

    One short transaction of its own, holding only the channel's counter: numbering inside the writing
    transaction would hold the counter to its commit and add a lock to every writer of a session (a deadlock
    waiting to happen against the session row). Numbered after commit, a number n+1 exists only once n's row
    is committed, which is what a reader that sees a hole relies on. Every unnumbered row of the channel is
    numbered, in id order: a crash's leftovers, and rows of a writer whose own call is still to come.
    """
    sessions = sorted({str(row.session_id) for row in rows if _numbered(row)})
    if not sessions:
        return
    with transaction.atomic():
        counters = _locked_counters(sessions)
        numbers: dict[int, int] = {}
        for counter in counters:
            unnumbered = Event.objects.filter(channel=f"session:{counter.session_id}", seq__isnull=True)
            for event_id in unnumbered.order_by("id").values_list("id", flat=True):
                counter.last += 1
                numbers[event_id] = counter.last
        Event.objects.bulk_update([Event(id=i, seq=n) for i, n in numbers.items()], ["seq"])
        EventSequence.objects.bulk_update(counters, ["last"])
    taken = [row.id for row in rows if _numbered(row) and row.id not in numbers]  # numbered by a later writer
    if taken:
        numbers.update((i, n) for i, n in Event.objects.filter(id__in=taken).values_list("id", "seq") if n)
    for row in rows:
        row.seq = numbers.get(row.id, row.seq)


def events_unnumbered(*, before: datetime, limit: int = 1000) -> list[Event]:
    """Session-channel rows stored before `before` and still unnumbered: a process died between its commit and
    `events_number`."""
    rows = Event.objects.filter(seq__isnull=True, channel__startswith="session:", created_at__lt=before)
    return list(rows.order_by("id")[:limit])


def _locked_counters(sessions: list[str]) -> list[EventSequence]:
    """The sessions' counters under their row locks, taken in one order; a session's first event creates its."""
    locked = EventSequence.objects.select_for_update().filter(session_id__in=sessions).order_by("session_id")
    counters = list(locked)
    if len(counters) < len(sessions):
        EventSequence.objects.bulk_create([EventSequence(session_id=s) for s in sessions], ignore_conflicts=True)
        counters = list(locked.all())
    return counters


def _numbered(row: Event) -> bool:
    return row.session_id is not None and row.channel == f"session:{row.session_id}"


def events_delete(*, created_before: datetime) -> int:
    """Delete the catch-up events older than the cutoff; returns how many."""
    deleted, _ = Event.objects.filter(created_at__lt=created_before).delete()
    return deleted
