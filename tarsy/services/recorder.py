"""DbRecorder: the database-backed Recorder a controller step writes through.

Every row is tagged with (execution, iteration) so a re-run of an interrupted
iteration can discard the first attempt's rows. Streamed deltas go to the
browser as transient chunks, coalesced, and are persisted periodically so a
page reload mid-stream shows the text so far.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from agents.context import LLMInteractionRecord, MCPInteractionRecord
from agents.llm.types import ConversationMessage
from tarsy.models import AgentExecution, AlertSession, SessionStatus, TimelineStatus

from . import interactions, messages, timeline

CHUNK_INTERVAL_S = 0.05  # ≤ ~20 stream.chunk events per second per timeline event
PERSIST_INTERVAL_S = 1.0  # how stale a reloaded page's streaming text may be
STOP_CHECK_INTERVAL_S = 0.5  # cancellation must be seen within a couple of seconds
HEARTBEAT_INTERVAL_S = 5.0


@dataclass
class _Stream:
    content: str = ""
    pending: str = ""
    pending_kind: str = "text"
    last_sent: float = 0.0
    last_saved: float = field(default_factory=time.monotonic)


class DbRecorder:
    def __init__(self, *, session_id: Any, stage_id: int | None, execution_id: Any, iteration: int,
                 session_deadline: float | None = None):
        self.session_id = session_id
        self.stage_id = stage_id
        self.execution_id = execution_id
        self.iteration = iteration
        self.session_deadline = session_deadline
        self._streams: dict[int, _Stream] = {}
        self._last_stop_check = 0.0
        self._stop_reason: str | None = None
        # The iteration's claim has just stamped both heartbeats: the next one is due an interval from now.
        self._last_heartbeat = time.monotonic()
        # This task is the one writer of the execution's rows during its iteration (lease): after one lookup
        # it knows the next sequence numbers itself (unique constraints still guard them).
        self._next_event_sequence: int | None = None
        self._next_message_sequence: int | None = None

    # ---- conversation ---------------------------------------------------------
    def conversation(self) -> list[ConversationMessage]:
        stored, self._next_message_sequence = messages.messages_with_next_sequence(execution_id=self.execution_id)
        return stored

    def add_messages(self, msgs: list[ConversationMessage]) -> None:
        if msgs:
            self._next_message_sequence = messages.messages_append(
                session_id=self.session_id, execution_id=self.execution_id, iteration=self.iteration,
                messages=msgs, start=self._next_message_sequence)

    # ---- timeline -------------------------------------------------------------
    def _create(self, event_type: str, content: str, metadata: dict[str, Any] | None, status: str) -> int:
        event = timeline.timeline_event_create(
            session_id=self.session_id, stage_id=self.stage_id, execution_id=self.execution_id,
            iteration=self.iteration, event_type=event_type, content=content, metadata=metadata, status=status,
            sequence_number=self._next_event_sequence if self.execution_id else None,
        )
        if self.execution_id:
            self._next_event_sequence = event.sequence_number + 1
        return event.id

    def start_event(self, event_type: str, metadata: dict[str, Any] | None = None, content: str = "") -> int:
        event_id = self._create(event_type, content, metadata, TimelineStatus.STREAMING)
        self._streams[event_id] = _Stream(content=content)
        return event_id

    def stream_event(self, event_id: int, delta: str, kind: str = "text") -> None:
        stream = self._streams.setdefault(event_id, _Stream())
        stream.content += delta
        stream.pending += delta
        stream.pending_kind = kind
        now = time.monotonic()
        if now - stream.last_sent >= CHUNK_INTERVAL_S:
            self._flush(event_id, stream, now)
        if now - stream.last_saved >= PERSIST_INTERVAL_S:
            timeline.timeline_event_save_progress(event_id=event_id, content=stream.content)
            stream.last_saved = now
        self.heartbeat()

    def _flush(self, event_id: int, stream: _Stream, now: float) -> None:
        if stream.pending:
            timeline.timeline_event_stream_chunk(session_id=self.session_id, event_id=event_id,
                                                 delta=stream.pending, kind=stream.pending_kind)
            stream.pending = ""
        stream.last_sent = now

    def complete_event(self, event_id: int, content: str, status: str = "completed",
                       metadata: dict[str, Any] | None = None, event_type: str | None = None) -> None:
        stream = self._streams.pop(event_id, None)
        if stream is not None:
            self._flush(event_id, stream, time.monotonic())
        timeline.timeline_event_complete(event_id=event_id, content=content, status=status, metadata=metadata,
                                         event_type=event_type)

    def add_event(self, event_type: str, content: str, metadata: dict[str, Any] | None = None,
                  status: str = "completed") -> int:
        return self._create(event_type, content, metadata, status)

    # ---- debug records ----------------------------------------------------------
    def record_llm_interaction(self, record: LLMInteractionRecord) -> None:
        interactions.llm_interaction_record(session_id=self.session_id, execution_id=self.execution_id,
                                            iteration=self.iteration, record=record, touch_session=True)

    def record_mcp_interaction(self, record: MCPInteractionRecord) -> None:
        interactions.mcp_interaction_record(session_id=self.session_id, execution_id=self.execution_id,
                                            iteration=self.iteration, record=record)
        self._touch_session()

    def _touch_session(self) -> None:
        AlertSession.all_objects.filter(id=self.session_id).update(last_interaction_at=timezone.now())

    # ---- liveness ----------------------------------------------------------------
    def heartbeat(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_heartbeat < HEARTBEAT_INTERVAL_S:
            return
        self._last_heartbeat = now
        stamp = timezone.now()
        if self.execution_id:
            AgentExecution.objects.filter(id=self.execution_id).update(last_heartbeat_at=stamp)
        AlertSession.all_objects.filter(id=self.session_id).update(last_heartbeat_at=stamp)

    def stop_reason(self) -> str | None:
        """Checked between chunks and tool calls; throttled so streaming does not hammer the database."""
        if self._stop_reason:
            return self._stop_reason
        now = time.monotonic()
        if now - self._last_stop_check < STOP_CHECK_INTERVAL_S:
            return None
        self._last_stop_check = now
        if self.execution_id:  # one query for both statuses
            row = AgentExecution.objects.filter(id=self.execution_id).values_list("session__status", "status").first()
            status, execution_status = row or (None, None)
        else:
            status = AlertSession.all_objects.filter(id=self.session_id).values_list("status", flat=True).first()
            execution_status = None
        if status in (SessionStatus.CANCELLING, SessionStatus.CANCELLED):
            self._stop_reason = "cancelled"
        elif status == SessionStatus.TIMED_OUT or (self.session_deadline and time.time() > self.session_deadline):
            self._stop_reason = "timed_out"
        elif execution_status in ("cancelled", "timed_out"):
            self._stop_reason = "cancelled"
        return self._stop_reason
