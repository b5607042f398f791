"""DbRecorder: the database-backed Recorder a controller step writes through.

Every row is tagged with (execution, iteration) so a re-run of an interrupted
iteration can discard the first attempt's rows. Streamed deltas go to the
browser as transient chunks, coalesced, and are persisted periodically so a
page reload mid-stream shows the text so far.

Writes are batched: what a step records after a call (the completed event, the
interaction, messages, the next events) waits in memory and is written in one
transaction — at the next event that must show at once (`start_event`), before
the next long wait (`flush`, called before every LLM and tool call), or inside
the transaction that completes the iteration. One commit (one WAL flush) for a
handful of rows instead of one each. Nothing is weakened: a worker that dies
before the batch is written re-runs the iteration, which discards the attempt
anyway; and the user never waits on a batch, because it is written before
anything slow starts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from agents.context import LLMInteractionRecord, MCPInteractionRecord
from agents.llm.types import ConversationMessage
from tarsy.models import AgentExecution, AlertSession, SessionStatus, TimelineEvent, TimelineStatus
from tarsy.streaming.publisher import batched_events

from . import interactions, messages, timeline

log = logging.getLogger(__name__)

CHUNK_INTERVAL_S = 0.05  # ≤ ~20 stream.chunk events per second per timeline event
PERSIST_INTERVAL_S = 1.0  # how stale a reloaded page's streaming text may be
STOP_CHECK_INTERVAL_S = 0.5  # cancellation must be seen within a couple of seconds
HEARTBEAT_INTERVAL_S = 5.0


@dataclass
class _Stream:
    event: TimelineEvent
    content: str = ""
    pending: str = ""
    pending_kind: str = "text"
    last_sent: float = 0.0
    last_saved: float = field(default_factory=time.monotonic)


class DbRecorder:
    def __init__(self, *, session_id: Any, stage_id: int | None, execution_id: Any, iteration: int,
                 session_deadline: float | None = None, next_event_sequence: int | None = None,
                 stop_checked: bool = False):
        """`next_event_sequence`: the execution's next timeline sequence number when the caller knows it
        (looked up otherwise). `stop_checked`: the caller has just seen the session running, so the first
        cancellation check can wait an interval."""
        self.session_id = session_id
        self.stage_id = stage_id
        self.execution_id = execution_id
        self.iteration = iteration
        self.session_deadline = session_deadline
        self._streams: dict[int, _Stream] = {}
        self._last_stop_check = time.monotonic() if stop_checked else 0.0
        self._stop_reason: str | None = None
        # The iteration's claim has just stamped both heartbeats: the next one is due an interval from now.
        self._last_heartbeat = time.monotonic()
        # This task is the one writer of the execution's rows during its iteration (lease): it knows the next
        # sequence numbers and the conversation itself after one lookup (unique constraints still guard them).
        self._next_event_sequence = next_event_sequence
        self._conversation: list[ConversationMessage] | None = None
        self._next_message_sequence = 1
        self._pending: list[Callable[[], None]] = []
        self._pending_messages: list[ConversationMessage] = []
        self._pending_messages_start = 1
        # Tokens of the batch's LLM calls and whether it holds any call: added to the totals once per batch.
        self._pending_tokens: dict[str, Any] = dict.fromkeys(interactions.TOTAL_FIELDS, 0)
        self._pending_touch = False

    # ---- batching -------------------------------------------------------------
    def flush(self, *, execution_totals: bool = True) -> None:
        """Write what is pending in one transaction; joins the caller's transaction when there is one.
        `execution_totals=False`: the caller's own UPDATE of the execution row adds `execution_token_changes`."""
        if not self._pending and not self._pending_messages and not self._pending_touch:
            return
        with transaction.atomic(savepoint=False):
            self._write_pending(execution_totals=execution_totals)

    def execution_token_changes(self) -> dict[str, Any]:
        return interactions.token_changes(self._pending_tokens)

    def _write_pending(self, execution_totals: bool = True) -> None:
        if self._pending_messages:
            messages.messages_append(session_id=self.session_id, execution_id=self.execution_id,
                                     iteration=self.iteration, messages=self._pending_messages,
                                     start=self._pending_messages_start)
        with batched_events():
            for write in self._pending:
                write()
        if self._pending_touch:
            interactions.add_tokens(session_id=self.session_id,
                                    execution_id=self.execution_id if execution_totals else None, sign=1,
                                    counts=self._pending_tokens, session_fields={"last_interaction_at": timezone.now()})
        # Cleared only once written: a failed write leaves the batch for the error path's own flush.
        self._clear_pending()

    def _clear_pending(self) -> None:
        self._pending_messages, self._pending = [], []
        self._pending_tokens = dict.fromkeys(interactions.TOTAL_FIELDS, 0)
        self._pending_touch = False

    def flush_after_failure(self) -> None:
        """After a crash in the step: keep what the attempt recorded if it can be written; a batch that cannot
        (the crash may have come from it) is dropped and logged so the error itself can still be recorded."""
        try:
            self.flush()
        except (OperationalError, InterfaceError):
            raise  # the database is away: the task retries the iteration
        except DatabaseError:
            log.exception("execution %s iteration %s: dropping a batch that cannot be written",
                          self.execution_id, self.iteration)
            self._clear_pending()

    # ---- conversation ---------------------------------------------------------
    def conversation(self) -> list[ConversationMessage]:
        if self._conversation is None:
            stored, self._next_message_sequence = messages.messages_with_next_sequence(
                execution_id=self.execution_id)
            self._conversation = stored
        return list(self._conversation)

    def add_messages(self, msgs: list[ConversationMessage]) -> None:
        if not msgs:
            return
        self.conversation()  # the sequence numbers continue the stored conversation
        if not self._pending_messages:
            self._pending_messages_start = self._next_message_sequence
        self._pending_messages.extend(msgs)
        self._conversation.extend(msgs)
        self._next_message_sequence += len(msgs)

    # ---- timeline -------------------------------------------------------------
    def _next_sequence(self) -> int | None:
        if not self.execution_id:
            return None  # session-level events: looked up under the session's own rows
        if self._next_event_sequence is None:
            self._next_event_sequence = timeline.next_sequence(session_id=self.session_id,
                                                               execution_id=self.execution_id)
        sequence = self._next_event_sequence
        self._next_event_sequence += 1
        return sequence

    def _create(self, event_type: str, content: str, metadata: dict[str, Any] | None, status: str,
                sequence_number: int | None) -> TimelineEvent:
        return timeline.timeline_event_create(
            session_id=self.session_id, stage_id=self.stage_id, execution_id=self.execution_id,
            iteration=self.iteration, event_type=event_type, content=content, metadata=metadata, status=status,
            sequence_number=sequence_number,
        )

    def start_event(self, event_type: str, metadata: dict[str, Any] | None = None, content: str = "") -> int:
        """A streaming event shows at once: it is written now, with whatever was pending, in one transaction."""
        sequence = self._next_sequence()
        with transaction.atomic(savepoint=False):
            self._write_pending()
            event = self._create(event_type, content, metadata, TimelineStatus.STREAMING, sequence)
        self._streams[event.id] = _Stream(event=event, content=content)
        return event.id

    def stream_event(self, event_id: int, delta: str, kind: str = "text") -> None:
        stream = self._streams[event_id]
        stream.content += delta
        stream.pending += delta
        stream.pending_kind = kind
        now = time.monotonic()
        if now - stream.last_sent >= CHUNK_INTERVAL_S:
            self._flush_chunk(event_id, stream, now)
        if now - stream.last_saved >= PERSIST_INTERVAL_S:
            timeline.timeline_event_save_progress(event_id=event_id, content=stream.content)
            stream.last_saved = now
        self.heartbeat()

    def _flush_chunk(self, event_id: int, stream: _Stream, now: float) -> None:
        if stream.pending:
            timeline.timeline_event_stream_chunk(session_id=self.session_id, event_id=event_id,
                                                 delta=stream.pending, kind=stream.pending_kind)
            stream.pending = ""
        stream.last_sent = now

    def complete_event(self, event_id: int, content: str, status: str = "completed",
                       metadata: dict[str, Any] | None = None, event_type: str | None = None) -> None:
        stream = self._streams.pop(event_id, None)
        if stream is None:  # not started by this recorder: read it under a lock
            self._pending.append(lambda: timeline.timeline_event_complete(
                event_id=event_id, content=content, status=status, metadata=metadata, event_type=event_type))
            return
        self._flush_chunk(event_id, stream, time.monotonic())
        self._pending.append(lambda: timeline.timeline_event_finish(
            stream.event, content=content, status=status, metadata=metadata, event_type=event_type))

    def add_event(self, event_type: str, content: str, metadata: dict[str, Any] | None = None,
                  status: str = "completed") -> None:
        sequence = self._next_sequence()
        self._pending.append(lambda: self._create(event_type, content, metadata, status, sequence))

    # ---- debug records ----------------------------------------------------------
    def record_llm_interaction(self, record: LLMInteractionRecord) -> None:
        self._pending.append(lambda: interactions.llm_interaction_record(
            session_id=self.session_id, execution_id=self.execution_id, iteration=self.iteration, record=record,
            add_to_totals=False))
        for name, value in interactions.call_totals(record).items():
            self._pending_tokens[name] += value
        self._pending_touch = True

    def record_mcp_interaction(self, record: MCPInteractionRecord) -> None:
        self._pending.append(lambda: interactions.mcp_interaction_record(
            session_id=self.session_id, execution_id=self.execution_id, iteration=self.iteration, record=record))
        self._pending_touch = True

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
