"""The live stream: streamed deltas go to the browser as coalesced transient chunks, and the text so far is
saved now and then so a page reloaded mid-stream shows it. Nothing here is part of the write batch: chunks are
transient, and the event's final content is written by the batch when the event completes."""

from __future__ import annotations

import time
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
    content: str = ""
    pending: str = ""
    pending_kind: str = "text"
    last_sent: float = 0.0
    last_saved: float = field(default_factory=time.monotonic)


class LiveStream:
    """The streaming events of one step, by timeline event id."""

    def __init__(self, *, session_id: Any):
        self.session_id = session_id
        self._streams: dict[int, _Stream] = {}

    def open(self, event: TimelineEvent) -> None:
        self._streams[event.id] = _Stream(event=event, content=event.content)

    def add(self, event_id: int, delta: str, kind: str = "text") -> None:
        stream = self._streams[event_id]
        stream.content += delta
        stream.pending += delta
        stream.pending_kind = kind
        now = time.monotonic()
        if now - stream.last_sent >= CHUNK_INTERVAL_S:
            self._send(event_id, stream, now)
        if now - stream.last_saved >= PERSIST_INTERVAL_S:
            content = stream.content
            reconnecting(lambda: timeline.timeline_event_save_progress(event_id=event_id, content=content))
            stream.last_saved = now

    def close(self, event_id: int) -> TimelineEvent | None:
        """Send what is left and stop streaming; the event as written at its start (None: not one of ours)."""
        stream = self._streams.pop(event_id, None)
        if stream is None:
            return None
        self._send(event_id, stream, time.monotonic())
        return stream.event

    def _send(self, event_id: int, stream: _Stream, now: float) -> None:
        if stream.pending:
            timeline.timeline_event_stream_chunk(session_id=self.session_id, event_id=event_id,
                                                 delta=stream.pending, kind=stream.pending_kind)
            stream.pending = ""
        stream.last_sent = now
