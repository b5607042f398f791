"""Live transport of events: frames out to the web processes, on Redis or (embedded) to the server's loop.

The database is the truth; the socket only notifies. A persistent event is stored first (tarsy.services.events,
one row per channel: the row id is the client's catch-up cursor) and handed here after its transaction commits
(`send_stored`); transient `stream.chunk` events are sent at once and never stored (`publish_transient`). This
module stores nothing and imports no model.

Each event's JSON is encoded once, here. With Redis, the events of one commit
go out as one PUBLISH per channel, in one pipeline, from the committing thread: a round trip
of ~0.1 ms, where a hand-off to a sender thread waited for the GIL behind the
busy worker thread (up to the 5 ms switch interval). Web processes subscribe
once per channel and write the frame to their sockets (fanout.py). Without
Redis (embedded mode) the in-process worker hands the frames to the ASGI
server's loop (`use_event_loop`).

A send that fails (Redis down, or skipped in the pause after a failure) leaves the web processes short of some
stored events. The publisher remembers the channels concerned and, once Redis answers again, publishes a notice
with no events on each: the web processes catch their sockets up from the database (fanout.py). A session
channel's events are numbered in the transaction that stores them (services.events), so a gap also shows at the
next event.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

from django.conf import settings

from .fanout import by_channel, encode_events, fanout_for_loop, redis_channel, seq_of_first

log = logging.getLogger(__name__)

SESSIONS_CHANNEL = "sessions"
SEND_TIMEOUT_S = 1.0  # a stuck Redis must not stall an iteration for long
PAUSE_AFTER_FAILURE_S = 5.0  # after a failed send, skip live delivery for a while (catch-up recovers)

Frame = tuple[str, int | None, str]  # channel, event id (None: transient), JSON text

_loop: asyncio.AbstractEventLoop | None = None
_redis = None
_redis_url = ""
_redis_lock = threading.Lock()
_paused_until = 0.0
_unsent: set[str] = set()  # channels with stored events that no web process was sent (guarded by _redis_lock)
_notice_timer: threading.Timer | None = None


class StoredEvent(Protocol):
    """A stored event as the transport reads it (an `Event` row: the transport stores nothing itself)."""

    @property
    def id(self) -> int: ...
    @property
    def channel(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def payload(self) -> dict[str, Any]: ...
    @property
    def seq(self) -> int | None: ...


def session_channel(session_id: Any) -> str:
    return f"session:{session_id}"


def use_event_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Embedded mode: deliver to the fan-out of this loop (the ASGI server's) instead of Redis."""
    global _loop
    _loop = loop


def _redis_client():
    global _redis, _redis_url
    with _redis_lock:
        if _redis is None or _redis_url != settings.REDIS_URL:
            import redis

            _redis_url = settings.REDIS_URL
            _redis = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=SEND_TIMEOUT_S,
                                          socket_connect_timeout=SEND_TIMEOUT_S)
        return _redis


def _send(frames: list[Frame], seqs: dict[int, int] | None = None) -> None:
    """Hand frames to the live transport, in order (`seqs` numbers stored events of session channels by id).
    Never raises: what Redis did not take is announced to the web processes once it is back (`_unsent`)."""
    global _paused_until
    seqs = seqs or {}
    if _loop is not None:
        if not _loop.is_closed():
            _loop.call_soon_threadsafe(fanout_for_loop(_loop).hand_over, frames, seqs)
        return
    if not settings.REDIS_URL:
        return
    if time.monotonic() < _paused_until:
        _remember_unsent(frames)
        return
    try:
        pipe = _redis_client().pipeline(transaction=False)
        for channel, events in by_channel(frames):
            pipe.publish(redis_channel(channel), encode_events(events, seq_of_first(events, seqs)))
        pipe.execute()
    except Exception:
        _paused_until = time.monotonic() + PAUSE_AFTER_FAILURE_S
        log.warning("live event delivery failed; pausing it for %.0f s", PAUSE_AFTER_FAILURE_S, exc_info=True)
        _remember_unsent(frames)


def _remember_unsent(frames: list[Frame]) -> None:
    """Note the channels of stored events that were not sent, and make sure a notice goes out for them."""
    global _notice_timer
    channels = {channel for channel, event_id, _ in frames if event_id is not None}
    if not channels:
        return  # transient events only: nothing to catch up
    with _redis_lock:
        _unsent.update(channels)
        if _notice_timer is None:
            _notice_timer = threading.Timer(max(0.0, _paused_until - time.monotonic()), _send_notices)
            _notice_timer.daemon = True
            _notice_timer.start()


def _send_notices() -> None:
    """Tell the web processes which channels to catch up from the database; retried until Redis takes it."""
    global _notice_timer, _paused_until
    with _redis_lock:
        channels, _notice_timer = sorted(_unsent), None
        _unsent.clear()
    try:
        pipe = _redis_client().pipeline(transaction=False)
        for channel in channels:
            pipe.publish(redis_channel(channel), encode_events([]))
        pipe.execute()
        _paused_until = 0.0
        log.info("live event delivery restored; %d channels told to catch up", len(channels))
    except Exception:
        _paused_until = time.monotonic() + PAUSE_AFTER_FAILURE_S
        log.warning("live event delivery still failing; retrying in %.0f s", PAUSE_AFTER_FAILURE_S)
        _remember_unsent([(channel, 0, "") for channel in channels])


def _frame(event: dict[str, Any]) -> Frame:
    return event.get("channel", ""), event.get("event_id"), json.dumps(event, ensure_ascii=False, default=str)


def event_message(event: StoredEvent) -> dict[str, Any]:
    """The message a client reads of a stored event, live or in a catch-up."""
    message = {"type": event.type, "event_id": event.id, "channel": event.channel, **event.payload}
    if event.seq is not None:
        message["seq"] = event.seq
    return message


def send_stored(rows: Sequence[StoredEvent]) -> None:
    """Send stored events, in order (call it once their transaction committed: tarsy.services.events does)."""
    _send([_frame(event_message(row)) for row in rows], {row.id: row.seq for row in rows if row.seq is not None})


def publish_transient(event_type: str, payload: dict[str, Any], *, session_id: Any) -> None:
    """Send without storing (stream.chunk): losing one is harmless, the row holds the full content."""
    channel = session_channel(session_id)
    _send([_frame({"type": event_type, "channel": channel, **payload})])
