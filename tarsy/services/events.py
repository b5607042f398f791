"""Stored events: the rows behind the WebSocket catch-up. `publish` stores an event (one row per channel, numbered
on a session's channel) and hands the stored rows to the live transport when the transaction commits
(tarsy.streaming.publisher); retention removes old rows."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from django.db import transaction

from tarsy.models import Event
from tarsy.services.counters import CountersChange, session_counter_raise, session_counters_change
from tarsy.streaming.publisher import SESSIONS_CHANNEL, send_stored, session_channel

_batch: ContextVar[list[Event] | None] = ContextVar("tarsy_event_batch", default=None)


def publish(event_type: str, payload: dict[str, Any], *, session_id: Any = None,
            channels: list[str] | None = None, seq: int | None = None) -> list[Event]:
    """Store a persistent event (one row per channel) and send it from the stored rows when the current
    transaction commits. Inside `batched_events` the rows are stored with the block's, in publication order (the
    order of their ids, the catch-up cursor's). `seq`: its number on the session's channel when the caller wrote
    the counter itself (a session's first event, stored with the session row); otherwise it is numbered as stored."""
    if channels is None:
        channels = [session_channel(session_id)] if session_id else [SESSIONS_CHANNEL]
    rows = [Event(session_id=session_id, channel=ch, type=event_type, payload=payload,
                  seq=seq if ch == session_channel(session_id) else None) for ch in channels]
    batch = _batch.get()
    if batch is not None:  # stored and sent with the rest of the block
        batch.extend(rows)
    else:  # one INSERT for every channel's row
        events_store(rows=rows)
        _send_on_commit(rows)
    return rows


def _send_on_commit(rows: list[Event]) -> None:
    transaction.on_commit(lambda: send_stored(rows))


@contextmanager
def batched_events(*, change: CountersChange | None = None) -> Iterator[None]:
    """Store the events published inside in one INSERT when the block ends, and send them together after the
    commit (call it inside a transaction). A block that raises stores nothing. `change`: what the block adds to
    its session's counters (an iteration's token totals), applied in the statement that numbers the block's
    events of that session, or on its own when there are none. Inside another block, the events (and `change`)
    join the outer block's and are stored when it ends."""
    outer = _batch.get()
    if outer is not None:
        if change:
            raise ValueError("a counters change goes with the outermost batch of events")
        mark = len(outer)
        try:
            yield
        except BaseException:
            del outer[mark:]  # the inner block stores nothing, as on its own
            raise
        return
    rows: list[Event] = []  # every row published in the block, in order
    token = _batch.set(rows)
    try:
        yield
    finally:
        _batch.reset(token)
    if rows:
        events_store(rows=rows, change=change)
        _send_on_commit(rows)
    elif change:
        session_counters_change(change)


def events_store(*, rows: list[Event], change: CountersChange | None = None) -> None:
    """Number the session-channel rows (`events_number`, which applies `change`), then store all rows in one
    INSERT (PostgreSQL and SQLite return the ids the catch-up cursor needs), in the caller's transaction (or one
    of their own)."""
    with transaction.atomic(savepoint=False):
        events_number(rows=rows, change=change)
        Event.objects.bulk_create(rows)


def events_number(*, rows: list[Event], change: CountersChange | None = None) -> None:
    """Give the session-channel rows of `rows` their next positions on their channels (`Event.seq`), in order;
    `change` goes with the raise of its session's counter (on its own when `rows` number none of that session).

    The counter is the session's `SessionCounters.event_seq`, raised in the writing transaction: the row stays
    locked until it commits, so a later writer of the session numbers after it and commits after it. A number
    n+1 therefore exists only once n is committed (a reader that sees a hole knows an event was lost, not still
    coming), and a rollback takes its numbers back with it. The raise locks the session row before the counters
    row (services.counters), as an update of the session does; sessions are taken in one order. Row locks taken
    elsewhere before the session's are FOR NO KEY UPDATE (stage join, claim), which the KEY SHARE locks of a
    numbering writer's deferred foreign keys at its commit do not wait on: no lock cycle through the session row.
    """
    counts = Counter(str(row.session_id) for row in rows if _numbered(row))
    changed = str(change.session_id) if change else None
    last = {session_id: session_counter_raise(session_id=session_id, counter="event_seq", by=count,
                                              change=change if session_id == changed else None) - count
            for session_id, count in sorted(counts.items())}
    if change and changed not in last:
        session_counters_change(change)
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
