"""Reads behind the live stream: a channel's catch-up cursor and the stored events after one.

A session channel's events are numbered (`Event.seq`) in the transaction that stores them, in commit order, so its
reads go by number: ids come from one sequence for all channels and two writers can commit them out of order. The
`sessions` channel has no numbers and goes by id.
"""

from __future__ import annotations

import uuid

from django.db.models import F

from tarsy.models import AlertSession, Event, SessionCounters


def is_numbered(channel: str) -> bool:
    return channel.startswith("session:")


def event_position(channel: str) -> tuple[int, int | None]:
    """The id and number of the channel's latest event (0 and None when it has none); on a session channel the
    highest numbered (rows stored before numbering existed, unnumbered, come before it)."""
    rows = Event.objects.filter(channel=channel)
    if is_numbered(channel):
        latest = rows.order_by(F("seq").desc(nulls_last=True), "-id").values_list("id", "seq").first()
        return (latest[0], latest[1]) if latest else (0, None)
    return rows.order_by("-id").values_list("id", flat=True).first() or 0, None


def event_cursor(channel: str) -> int:
    """The `last_event_id` to subscribe from. A page or a REST answer reads it before the rows it shows, so a
    client that subscribes from it misses nothing published in between."""
    return event_position(channel)[0]


def events_after(channel: str, *, last_event_id: int, limit: int) -> list[Event]:
    """Up to `limit` stored events a client holding `last_event_id` has not seen, in channel order."""
    rows = Event.objects.filter(channel=channel)
    if not is_numbered(channel):
        return list(rows.filter(id__gt=last_event_id).order_by("id")[:limit])
    seq = event_seq(channel, last_event_id) if last_event_id else 0
    if seq is None:  # not on this channel (or removed by retention): go by id
        return list(rows.filter(id__gt=last_event_id).order_by(F("seq").asc(nulls_last=True), "id")[:limit])
    return events_after_seq(channel, seq=seq, limit=limit)


def event_seq(channel: str, event_id: int) -> int | None:
    """The number of a session channel's event (None if it is not there)."""
    return Event.objects.filter(channel=channel, id=event_id).values_list("seq", flat=True).first()


def events_after_seq(channel: str, *, seq: int, limit: int) -> list[Event]:
    """Up to `limit` events of a session channel numbered after `seq`, in order."""
    return list(Event.objects.filter(channel=channel, seq__gt=seq).order_by("seq")[:limit])


def sessions_last_numbers(session_ids: list[str]) -> dict[str, int]:
    """The last number each session has given an event of its channel (0 before its first)."""
    rows = SessionCounters.objects.filter(session_id__in=session_ids).values_list("session_id", "event_seq")
    return {str(session_id): last for session_id, last in rows}


def session_exists(session_id: uuid.UUID) -> bool:
    return AlertSession.objects.filter(id=session_id).exists()
