"""The live stream: streamed deltas go to the browser as coalesced transient chunks, and the text so far is
saved now and then so a page reloaded mid-stream shows it. Chunks are transient, and the event's final content is
written by the batch when the event completes.

A reply's event is stored when its first chunk goes out (`store`: the batch's write), not when its first delta
arrives: chunks go out at most every CHUNK_INTERVAL_S, counted from the first delta as from every chunk sent, so
a reply that arrives whole has nothing to stream and its event is stored complete with the step's next write — no
transaction of its own. A reply that streams on shows with its next delta, CHUNK_INTERVAL_S later at most."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tarsy.db_connections import reconnecting
from tarsy.models import TimelineEvent

from .. import timeline

CHUNK_INTERVAL_S = 0.05  # ≤ ~20 stream.chunk events per second per timeline event
PERSIST_INTERVAL_S = 1.0  # how stale a reloaded page's streaming text may be


@dataclass
class _Stream:
    event: TimelineEvent
    store: Callable[[], None]  # writes the event's row (with whatever else is pending) while it has none
    last_sent: float | None = None  # None until the first delta
    content: str = ""
    pending: str = ""
    pending_kind: str = "text"
    last_saved: float = field(default_factory=time.monotonic)


class LiveStream:
    """The events one step started, by handle (their sequence number in the timeline), and those streaming."""

    def __init__(self, *, session_id: Any):
        self.session_id = session_id
        self._events: dict[int, TimelineEvent] = {}
        self._streams: dict[int, _Stream] = {}

    def open(self, event: TimelineEvent, store: Callable[[], None]) -> int:
        """Stream into `event` (stored already, or pending in the batch that `store` writes); returns its handle."""
        handle = event.sequence_number
        self._events[handle] = event
        self._streams[handle] = _Stream(event=event, store=store, content=event.content)
        return handle

    def add(self, handle: int, delta: str, kind: str = "text") -> None:
        stream = self._streams[handle]
        stream.content += delta
        stream.pending += delta
        stream.pending_kind = kind
        now = time.monotonic()
        if stream.last_sent is None:
            stream.last_sent = now  # the first delta waits an interval, like a delta that follows a chunk sent
        elif now - stream.last_sent >= CHUNK_INTERVAL_S:
            self._send(stream, now)
        if now - stream.last_saved >= PERSIST_INTERVAL_S and stream.event.pk is not None:
            event_id, content = stream.event.pk, stream.content
            reconnecting(lambda: timeline.timeline_event_save_progress(event_id=event_id, content=content))
            stream.last_saved = now

    def close(self, handle: int) -> TimelineEvent:
        """Stop streaming (what is left goes out when the event is stored); the event, as written at its start
        or still pending."""
        stream = self._streams.pop(handle, None)
        if stream is not None and stream.event.pk is not None:
            self._send(stream, time.monotonic())
        return self._events[handle]

    def _send(self, stream: _Stream, now: float) -> None:
        if stream.pending:
            if stream.event.pk is None:
                stream.store()  # its row and its created event first: the browser appends chunks to it
            timeline.timeline_event_stream_chunk(session_id=self.session_id, event_id=stream.event.pk,
                                                 delta=stream.pending, kind=stream.pending_kind)
            stream.pending = ""
        stream.last_sent = now
