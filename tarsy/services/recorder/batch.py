"""The write batch: what a step records (timeline events, LLM and MCP records, messages), held in memory and
written in one transaction.

One flush rule: the batch is written before anything slow starts (`write`, called before every LLM call and
summary), with an event that must show at once (the recorder's `start_event`), and last inside the transaction
that completes the iteration (services.executions.iteration_complete). One commit (one WAL flush) for a handful
of rows instead of one each. Nothing is weakened: a worker that dies before the batch is written re-runs the
iteration, which discards the attempt anyway; and the user never waits on a batch, because it is written before
anything slow starts. New rows go in one INSERT per model (messages, timeline events, LLM and MCP records,
catch-up events), and the catch-up events are published in the order the step recorded things in.

The batch also numbers the execution's timeline events and messages (this task is their one writer during its
iteration, under the lease; unique constraints still guard the numbers) and tallies the tokens of the
iteration's LLM calls, which are applied once, when the iteration completes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, NoReturn

from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from agents.context import LLMInteractionRecord, MCPInteractionRecord
from agents.llm.types import ConversationMessage
from tarsy.db_connections import reconnecting
from tarsy.models import AgentExecution, CallStatus, LLMInteraction, TimelineEvent
from tarsy.services.events import batched_events

from .. import interactions, messages, timeline


def _rows_create(rows: list[Model]) -> None:
    """New rows of several models (messages, timeline events, LLM and MCP records): one INSERT per model, in
    their order."""
    by_model: dict[type[Model], list[Model]] = {}
    for row in rows:
        by_model.setdefault(type(row), []).append(row)
    for model, group in by_model.items():
        model.objects.bulk_create(group)


class _StoppedMidWrite(Exception):
    """An unfenced write outlived the window it started in, and a later attempt holds the iteration now."""


class AttemptSuperseded(Exception):
    """A later attempt has claimed this iteration (this task's lease ran out): nothing of this one may land."""


class WriteBatch:
    """`attempt`: the fencing token of the claim this step runs under (AgentExecution.attempt); every write from
    `unfenced_until` (time.monotonic) on checks it, so a step that wakes up after its lease was taken over can write
    nothing. None: no claim to check."""

    def __init__(self, *, session_id: Any, stage_id: int | None, execution_id: Any, iteration: int,
                 attempt: int | None = None, unfenced_until: float = 0.0, next_event_sequence: int | None = None,
                 claimed_call: LLMInteraction | None = None,
                 conversation: tuple[list[ConversationMessage], int] | None = None):
        """`next_event_sequence`: the number the execution's next timeline event takes, when the caller read it
        with the claim; None: looked up at the first event. `claimed_call`: the started row the claim wrote for
        the iteration's first LLM call (no statement of its own when that call starts). `conversation`: the
        stored conversation and the next message number, when the claim read them; None: read at first use."""
        self.session_id = session_id
        self.stage_id = stage_id
        self.execution_id = execution_id
        self.iteration = iteration
        self.attempt = attempt
        self.unfenced_until = unfenced_until
        self.usage = interactions.UsageTally()  # the whole iteration's, not cleared by a write
        self._next_event_sequence = next_event_sequence
        self._conversation, self._next_message_sequence = conversation if conversation is not None else (None, 1)
        self._writes: list[Callable[[], Any]] = []
        self._rows: list[tuple[Model, Callable[[Model], None] | None]] = []  # plain new rows, written together
        self._texts: dict[str, str] = {}  # long texts of the LLM records in _rows, by digest (InteractionText)
        self._messages: list[ConversationMessage] = []
        self._messages_start = 1
        self._claimed_call = claimed_call
        self._open_calls: list[LLMInteraction] = []  # rows of calls started and not yet recorded, in order
        self._completed_calls: list[LLMInteraction] = []  # written when they started, completed since

    # ---- the flush rule ---------------------------------------------------------
    def write(self, *, fenced: bool = False) -> None:
        """Write what is pending in one transaction (joins the caller's when there is one). `fenced`: the caller
        has already checked the attempt in this transaction (the iteration's completion)."""
        if not self._writes and not self._messages and not self._rows and not self._completed_calls:
            return
        held = reconnecting(lambda: self._write_fenced(fenced))
        if not held:
            self._superseded()

    def _write_fenced(self, fenced: bool) -> bool:
        new_rows = [row for row, _ in self._rows]
        calls, texts = new_rows + self._completed_calls, dict(self._texts)
        try:
            with transaction.atomic(savepoint=False):
                unfenced = not fenced and self._unfenced()
                held = fenced or unfenced or self._attempt_holds()
                if held:
                    self._write_pending()
                    if unfenced and not self._unfenced() and not self._attempt_holds(keep=False):
                        raise _StoppedMidWrite  # rolls the write back
        except _StoppedMidWrite:
            for row in new_rows:
                row.pk = None  # the rolled-back INSERT's ids are not theirs
            interactions.interactions_keep_superseded(session_id=self.session_id, execution_id=self.execution_id,
                                                      rows=calls, texts=texts)
            held = False
            return held
        if held and fenced:
            # Forgotten once the caller's transaction commits: a completion that rolls back (retried after a lost
            # connection) writes the batch again.
            transaction.on_commit(self.discard)
        elif held:
            self.discard()
        return held

    def _unfenced(self) -> bool:
        """Within the claim's first half-lease, when no other task can have taken the iteration over. A process
        stopped in the middle of a write (SIGSTOP, a paused VM) finds the window gone after it: that write is
        checked before its commit."""
        return self.attempt is None or not self.execution_id or time.monotonic() < self.unfenced_until

    def _attempt_holds(self, *, keep: bool = True) -> bool:
        """The fence: an UPDATE of the execution row while this attempt is the current one. Its row lock, held to
        the commit, orders the write after or before a takeover's claim, never across it (PostgreSQL's FOR UPDATE
        and SQLite's single writer alike); it also stamps the heartbeat. When a later attempt holds the row, this
        one's LLM and MCP records are still kept (`keep`), marked superseded (the calls were made); nothing else
        is."""
        if self.attempt is None:  # a recorder without a claim's attempt: nothing to fence
            return True
        if AgentExecution.objects.filter(id=self.execution_id, attempt=self.attempt).update(
                last_heartbeat_at=timezone.now()):
            return True
        if keep:
            interactions.interactions_keep_superseded(session_id=self.session_id, execution_id=self.execution_id,
                                                      rows=[row for row, _ in self._rows] + self._completed_calls,
                                                      texts=self._texts)
        return False

    def taken_over_check(self) -> None:
        """After the iteration's completion found its compare-and-set lost (outside that transaction, so what is
        kept stays): when a later attempt holds the iteration, this one's calls stay on the record, marked
        superseded (they were made and paid for), and AttemptSuperseded is raised; when this attempt still holds
        it (a completion retried after it committed), there is nothing to do."""
        if not reconnecting(self._attempt_holds):
            self._superseded()

    def _superseded(self) -> NoReturn:
        self.discard()
        raise AttemptSuperseded(f"execution {self.execution_id} iteration {self.iteration}: attempt {self.attempt} "
                                "was taken over by a later one")

    def _write_pending(self) -> None:
        rows = [row for row, _ in self._rows]
        if self._messages:
            rows[:0] = messages.message_rows(session_id=self.session_id, execution_id=self.execution_id,
                                             iteration=self.iteration, messages=self._messages,
                                             start=self._messages_start)
        interactions.interaction_texts_store(session_id=self.session_id, texts=self._texts)
        _rows_create(rows)
        for call in self._completed_calls:
            call.save(update_fields=list(interactions.CALL_RESULT_FIELDS))
        with batched_events():
            for write in self._writes:
                write()
        for row, observe in self._rows:
            if observe is not None:
                observe(row)

    def discard(self) -> None:
        """Forget what is pending (a batch that cannot be written); the usage tally stays with its calls' rows."""
        self._messages, self._writes, self._rows, self._texts = [], [], [], {}
        self._completed_calls = []

    def write_with_event(self, event_type: str, content: str, metadata: dict[str, Any] | None,
                         status: str) -> TimelineEvent:
        """Write what is pending and a new event with it (an event shown at once), in one transaction: the
        new events go in one INSERT, their catch-up events in another."""
        event = self._event_row(event_type, content, metadata, status)
        self.write()
        return event

    # ---- conversation ---------------------------------------------------------
    def conversation(self) -> list[ConversationMessage]:
        if self._conversation is None:
            self._conversation, self._next_message_sequence = reconnecting(
                lambda: messages.messages_with_next_sequence(execution_id=self.execution_id))
        return list(self._conversation)

    def add_messages(self, msgs: list[ConversationMessage]) -> None:
        if not msgs:
            return
        self.conversation()  # the sequence numbers continue the stored conversation
        if not self._messages:
            self._messages_start = self._next_message_sequence
        self._messages.extend(msgs)
        self._conversation.extend(msgs)
        self._next_message_sequence += len(msgs)

    # ---- timeline -------------------------------------------------------------
    def next_sequence(self) -> int:
        if self._next_event_sequence is None:
            self._next_event_sequence = timeline.next_sequence(session_id=self.session_id,
                                                               execution_id=self.execution_id)
        sequence = self._next_event_sequence
        self._next_event_sequence += 1
        return sequence

    def _event_row(self, event_type: str, content: str, metadata: dict[str, Any] | None,
                   status: str) -> TimelineEvent:
        """A new event: stored with the batch's other new rows (one INSERT per model), published in its turn
        among the batch's writes, so the catch-up order is the order the step recorded things in."""
        row = timeline.timeline_event_row(
            session_id=self.session_id, stage_id=self.stage_id, execution_id=self.execution_id,
            iteration=self.iteration, sequence_number=self.next_sequence(), event_type=event_type, status=status,
            content=content, metadata=metadata)
        self._rows.append((row, None))
        self._writes.append(lambda: timeline.timeline_event_created(row))
        return row

    def add_event(self, event_type: str, content: str, metadata: dict[str, Any] | None,
                  status: str) -> TimelineEvent:
        return self._event_row(event_type, content, metadata, status)

    def finish_event(self, event: TimelineEvent, content: str, status: str, metadata: dict[str, Any] | None,
                     event_type: str | None) -> None:
        """Complete an event this step started: one still pending is written complete with the batch (its created
        event then reports it complete); one stored already is updated with the batch."""
        if event.pk is None:
            timeline.timeline_event_settle(event, content=content, status=status, metadata=metadata,
                                           event_type=event_type)
            return
        self._writes.append(lambda: timeline.timeline_event_finish(
            event, content=content, status=status, metadata=metadata, event_type=event_type))

    # ---- debug records ----------------------------------------------------------
    def llm_call_started(self, interaction_type: str, provider: str, model: str) -> None:
        """The call's row goes with the next write (before the call); the claim's row serves the first call."""
        if self._claimed_call is not None:
            row, self._claimed_call = self._claimed_call, None
        else:
            row = interactions.llm_call_started_row(
                session_id=self.session_id, execution_id=self.execution_id, iteration=self.iteration,
                interaction_type=interaction_type, provider=provider, model=model)
            self._rows.append((row, None))
        self._open_calls.append(row)

    def add_llm_interaction(self, record: LLMInteractionRecord) -> None:
        row = interactions.llm_interaction_row(session_id=self.session_id, execution_id=self.execution_id,
                                               iteration=self.iteration, record=record)
        self.usage.add(interactions.call_totals(record))
        if self._open_calls:  # the call's row, written when it started (or still on its way with this batch)
            started = self._open_calls.pop(0)
            interactions.llm_call_completed(started, row)
            row = started
            if row.pk is not None:
                self._completed_calls.append(row)
        self._texts.update(interactions.llm_texts_share(row))
        observe = partial(interactions.llm_interaction_observe, record)
        pending = [i for i, (pending_row, _) in enumerate(self._rows) if pending_row is row]
        if pending:
            self._rows[pending[0]] = (row, observe)
        elif row.pk is None:
            self._rows.append((row, observe))
        else:
            self._writes.append(lambda: observe(row))

    def calls_close(self) -> None:
        """At the iteration's completion: the claim's row no call took is not a call (deleted); a call started
        and never recorded (its record could not be made) is interrupted."""
        if self._claimed_call is not None:
            unused, self._claimed_call = self._claimed_call, None
            self._writes.append(lambda: LLMInteraction.objects.filter(pk=unused.pk).delete())
        for row in self._open_calls:
            row.status, row.error_message = CallStatus.INTERRUPTED, interactions.INTERRUPTED_MESSAGE
            if row.pk is not None:
                self._completed_calls.append(row)
        self._open_calls = []

    def add_mcp_interaction(self, record: MCPInteractionRecord) -> None:
        row = interactions.mcp_interaction_row(session_id=self.session_id, execution_id=self.execution_id,
                                               iteration=self.iteration, record=record)
        self._rows.append((row, lambda row: interactions.mcp_interaction_observe(record)))
        self.usage.interacted = True
