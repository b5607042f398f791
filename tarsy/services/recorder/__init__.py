"""DbRecorder: the database-backed Recorder a controller step writes through.

It is two parts with one job each:

- `batch.WriteBatch`: timeline events, LLM and MCP records and messages, held in memory and written in one
  transaction under one flush rule; it numbers the rows and tallies the iteration's tokens, which
  services.executions.iteration_complete applies once, with the batch's last write, when the iteration completes.
- `stream.LiveStream`: a streaming event's deltas as coalesced transient chunks, and its text so far saved now
  and then for a page reloaded mid-stream.

The step's heartbeat and stop check are not the recorder's: they are `liveness.Liveness`, on the
ExecutionContext. Every row is tagged with (execution, iteration) so a re-run of an interrupted iteration can
discard the first attempt's rows.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, InterfaceError, OperationalError

from agents.context import LLMInteractionRecord, MCPInteractionRecord
from agents.llm.types import ConversationMessage
from tarsy.db_connections import connection_give_back, reconnecting
from tarsy.models import LLMInteraction, TimelineStatus

from .. import citations
from .batch import AttemptSuperseded, WriteBatch
from .liveness import HEARTBEAT_INTERVAL_S, Liveness
from .stream import LiveStream

__all__ = ["HEARTBEAT_INTERVAL_S", "AttemptSuperseded", "DbRecorder", "Liveness", "WriteBatch"]

log = logging.getLogger(__name__)


class DbRecorder:
    def __init__(self, *, session_id: Any, stage_id: int | None, execution_id: Any, iteration: int,
                 attempt: int | None = None, unfenced_until: float = 0.0, next_event_sequence: int | None = None,
                 claimed_call: LLMInteraction | None = None,
                 conversation: tuple[list[ConversationMessage], int] | None = None):
        self.batch = WriteBatch(session_id=session_id, stage_id=stage_id, execution_id=execution_id,
                                iteration=iteration, attempt=attempt, unfenced_until=unfenced_until,
                                next_event_sequence=next_event_sequence, claimed_call=claimed_call,
                                conversation=conversation)
        self.stream = LiveStream(session_id=session_id)

    def flush(self) -> None:
        """Make everything recorded so far visible (called before every LLM call and summary); a pooled
        connection goes back to its pool for the wait."""
        self.batch.write()
        connection_give_back()

    def flush_after_failure(self) -> None:
        """After a crash in the step: keep what the attempt recorded if it can be written; a batch that cannot
        (the crash may have come from it) is dropped and logged so the error itself can still be recorded."""
        try:
            self.batch.write()
        except (OperationalError, InterfaceError):
            raise  # the database is away: the task retries the iteration
        except DatabaseError:
            log.exception("execution %s iteration %s: dropping a batch that cannot be written",
                          self.batch.execution_id, self.batch.iteration)
            self.batch.discard()

    def conversation(self) -> list[ConversationMessage]:
        return self.batch.conversation()

    def add_messages(self, msgs: list[ConversationMessage]) -> None:
        self.batch.add_messages(msgs)

    def start_event(self, event_type: str, metadata: dict[str, Any] | None = None, content: str = "") -> int:
        """A tool call shows at once: its event is written now, with whatever was pending, in one transaction."""
        event = self.batch.write_with_event(event_type, content, metadata, TimelineStatus.STREAMING)
        handle = self.stream.open(event, store=self.batch.write)
        connection_give_back()  # what is started now (a tool call, a summary) is a wait
        return handle

    def stream_open(self, event_type: str, metadata: dict[str, Any] | None = None) -> int:
        """A reply's event: stored with its first chunks, or complete with the next write (stream.LiveStream)."""
        return self.stream.open(self.batch.add_event(event_type, "", metadata, TimelineStatus.STREAMING),
                                store=self.batch.write)

    def stream_event(self, event_id: int, delta: str, kind: str = "text") -> None:
        self.stream.add(event_id, delta, kind)

    def complete_event(self, event_id: int, content: str, status: str = "completed",
                       metadata: dict[str, Any] | None = None, event_type: str | None = None) -> None:
        self.batch.finish_event(self.stream.close(event_id), content, status, metadata, event_type)

    def add_event(self, event_type: str, content: str, metadata: dict[str, Any] | None = None,
                  status: str = "completed") -> None:
        self.batch.add_event(event_type, content, metadata, status)

    def llm_call_started(self, interaction_type: str, provider: str, model: str) -> None:
        self.batch.llm_call_started(interaction_type, provider, model)

    def record_llm_interaction(self, record: LLMInteractionRecord) -> None:
        self.batch.add_llm_interaction(record)

    def record_mcp_interaction(self, record: MCPInteractionRecord) -> None:
        self.batch.add_mcp_interaction(record)

    def evidence_id(self) -> str:
        """Issued now (one UPDATE), not batched: the model sees the id with the result in this same step."""
        return reconnecting(lambda: citations.evidence_id_issue(session_id=self.batch.session_id))
