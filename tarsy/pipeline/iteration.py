"""The iteration protocol: one agent iteration is one Celery task, and this module runs it, in this order.

1. **Claim** (`iteration_begin`; one transaction: 3 statements, the first commit). The execution row under its
   lock, with its stage, its session, its last timeline number, whether the session has action proposals and
   the conversation, in one SELECT. Guards: a finished execution, an iteration done, out of order or held by a
   live lease means there is nothing to do (a redelivered or duplicated task); a stopped session or a deadline
   passed ends the execution instead. A re-run of an interrupted attempt first discards what that attempt
   wrote. Then the lease: one UPDATE holds the iteration for `executions.lease_seconds` and raises `attempt`,
   the fencing token of every later write; and one INSERT opens the row of the iteration's first LLM call, so a
   call whose process dies leaves a row the sweeper closes as interrupted.
2. **Context** (`_step` → `execution_context.build_execution_context`): built once from the claimed row — no
   second read of the execution, its session, stage, conversation or configuration (the claim's SELECT brought
   the conversation as one JSON value, `services.messages.messages_of_outer_execution`).
3. **Budget** (`budget.iteration_budget`): from the session's counters the claim read; a reached budget makes
   the step conclude. No statement unless a budget needs the session's tool-call count.
4. **Step**: the controller's `step(ctx)` (one LLM call, maybe tools). Its writes go to the recorder's batch,
   written before anything slow starts; a reply that arrives whole costs no write while it streams
   (`services.recorder.stream`).
5. **Record**, fenced: every batch write of the attempt checks that its attempt still holds the row (an UPDATE
   … WHERE attempt), except in the claim's first half-lease, when no other task can have taken it over
   (`iteration_recorder`). A task that outlived its lease writes nothing (`AttemptSuperseded`).
6. **Number**: timeline events and messages are numbered by the batch from the numbers the claim read (the task
   is their one writer under its lease; unique constraints guard them); the session's catch-up events are
   numbered by the one statement that raises the session's counters row (`services.counters`), which also
   adds the iteration's tokens.
7. **Complete, decide, enqueue** (`iteration_finish`; one transaction: the second commit). A compare-and-set on
   (iteration, attempt) marks the iteration done once, with its tokens and the batch's last rows; then what
   follows is decided (`next_after_iteration`, an orchestrator's or an action agent's rules): the next
   iteration is sent once this commits (no outbox row: `tarsy.outbox.SENT_FIRST`), or the execution ends (its
   stage, parent and agent as the claim read them) and its stage joins in this same transaction. A lost
   compare-and-set with a later attempt holding the row is a takeover like a refused write: the attempt's calls
   stay on the record as superseded, and its task ends (`AttemptSuperseded`).

An iteration that continues without a tool call costs 9 statements and 2 commits
(tests/integration/controllers/test_iteration_statements.py pins them; `python -m tests.bench.iteration_overhead`
measures them on a worker).
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.utils import timezone

from agents.llm.types import ConversationMessage
from agents.mcp.masking.boundary import mask_text
from controllers.base import StepOutcome, StepStatus, timeout_outcome
from controllers.registry import controller_for
from tarsy.db_connections import LOST_CONNECTION, reconnecting
from tarsy.decisions import EndExecution, RunIteration, enact_on_commit
from tarsy.metrics import ITERATION_SECONDS
from tarsy.models import AgentExecution, ExecStatus, LLMInteraction, SessionStatus, StageKind
from tarsy.services import executions, interactions, messages
from tarsy.services.recorder import AttemptSuperseded, DbRecorder

from .actions.decisions import action_next, proposals_apply
from .execution_context import build_execution_context, session_deadline
from .iteration_calls import IterationCalls
from .stages import execution_end
from .sub_agents.decisions import dispatches_apply, orchestrator_next

log = logging.getLogger(__name__)

_OUTCOME_TO_STATUS = {
    StepStatus.COMPLETED: ExecStatus.COMPLETED,
    StepStatus.FAILED: ExecStatus.FAILED,
    StepStatus.TIMED_OUT: ExecStatus.TIMED_OUT,
    StepStatus.CANCELLED: ExecStatus.CANCELLED,
}


@dataclass(frozen=True)
class Claim:
    """An iteration just claimed, as its step needs it: the execution row read under its lock (with the claim
    query's annotations), the monotonic time the claim started the lease's clock from, the row it opened for
    the iteration's first LLM call, and the conversation it read (None after a discard: read at first use)."""

    execution: AgentExecution
    started: float
    call: LLMInteraction
    conversation: tuple[list[ConversationMessage], int] | None

    @property
    def attempt(self) -> int:
        return self.execution.attempt


def iteration_run(execution_id: Any, iteration: int) -> StepOutcome | None:
    """The protocol above, for one task: claim (1), step under a fenced recorder (2–6), complete (7). None when
    the task had nothing to do or its attempt was taken over."""
    claim = reconnecting(lambda: iteration_begin(execution_id, iteration))
    if claim is None:
        return None
    execution = claim.execution
    recorder = iteration_recorder(claim, iteration)
    calls = IterationCalls()
    try:
        outcome = _step(execution, iteration, recorder, calls)
        reconnecting(lambda: iteration_finish(execution_id, iteration, outcome, execution.iteration_timeout_s,
                                              recorder, calls, claimed=execution))
    except AttemptSuperseded:
        # This task outlived its lease and another attempt took the iteration over: the fence kept every write
        # of this one out (services.recorder.batch); the other attempt carries on.
        log.warning("execution %s iteration %s: attempt %s was taken over; its writes are dropped", execution_id,
                    iteration, execution.attempt)
        return None
    except LOST_CONNECTION:
        _release(execution, iteration)
        raise  # the database stayed away past a reconnect: Celery retries the task (tarsy.tasks)
    return outcome


def _release(execution: AgentExecution, iteration: int) -> None:
    """Give up this attempt's lease so the retried task can claim the iteration at once; a database still away
    leaves it to the lease's expiry (the sweeper)."""
    with contextlib.suppress(*LOST_CONNECTION):
        executions.execution_lease_release(execution_id=execution.id, iteration=iteration, attempt=execution.attempt)


# ---- 1. claim ------------------------------------------------------------------------------------------


def iteration_begin(execution_id: Any, iteration: int) -> Claim | None:
    """Claim iteration `iteration` of the execution under its row lock, or return None when this task has nothing
    to do (finished, done, out of order, held by another task) or the execution must stop instead (it is ended)."""
    with transaction.atomic():
        execution = executions.execution_lock_for_iteration(execution_id=execution_id)
        if execution is None or _nothing_to_do(execution, iteration):
            return None
        stop = _stop_status(execution)
        if stop is None:
            return _claim(execution, iteration)
    execution_end(execution_id=execution_id, status=stop[0], error=stop[1])
    return None


def _claim(execution: AgentExecution, iteration: int) -> Claim:
    """Take the lease; an interrupted attempt's rows go first."""
    discard = execution.current_iteration == iteration
    if discard:
        executions.iteration_discard(execution_id=execution.id, iteration=iteration)
        execution.last_event_sequence = None  # the discarded events' numbers are free again: looked up anew
    # The conversation the claim read, unless the discard has just removed part of it (then read at first use).
    conversation = None if discard else messages.conversation_decode(execution.conversation)
    # Read before the lease's clock: a process stopped between the claim and its recorder (SIGSTOP, a paused VM)
    # wakes with its unfenced window gone, not starting afresh while another task may have taken the lease over.
    started = time.monotonic()
    executions.execution_claim_iteration(execution=execution, iteration=iteration, now=timezone.now())
    return Claim(execution=execution, started=started, conversation=conversation,
                 call=interactions.llm_call_open(execution=execution, iteration=iteration))


def _stop_status(execution: AgentExecution) -> tuple[str, str] | None:
    """Why an execution must not start another iteration, if it must not."""
    session = execution.session
    if execution.stage.kind == StageKind.CHAT:  # runs on a finished session: only a sub-agent's own limit
        return _past_deadline(execution)
    if session.status in (SessionStatus.CANCELLING, SessionStatus.CANCELLED):
        return ExecStatus.CANCELLED, "Cancelled by user"
    deadline = session_deadline(execution)
    if session.status == SessionStatus.TIMED_OUT or (deadline and timezone.now().timestamp() > deadline):
        return ExecStatus.TIMED_OUT, "Session timeout reached"
    if session.status != SessionStatus.IN_PROGRESS:
        return ExecStatus.CANCELLED, f"Session is {session.status}"
    return _past_deadline(execution)


def _past_deadline(execution: AgentExecution) -> tuple[str, str] | None:
    if execution.deadline_at and timezone.now() > execution.deadline_at:
        return ExecStatus.TIMED_OUT, "Sub-agent timeout reached"
    return None


def _nothing_to_do(execution: AgentExecution, iteration: int) -> bool:
    """A finished execution, an iteration already done or out of order, or one another task holds."""
    if execution.is_terminal or execution.iterations_completed >= iteration:
        return True
    if execution.status in (ExecStatus.WAITING, ExecStatus.QUEUED):
        return True  # parked, or a sub-agent without its slot yet: only its wake (or start) queues its task
    if iteration != execution.iterations_completed + 1:
        log.warning("execution %s: iteration %s out of order (completed %s)", execution.id, iteration,
                    execution.iterations_completed)
        return True
    lease = execution.lease_expires_at
    # Another task holds this iteration; the sweeper takes over if it dies.
    return execution.current_iteration == iteration and lease is not None and lease > timezone.now()


# ---- 2.–6. context, budget, step, record, number -------------------------------------------------------


def iteration_recorder(claim: Claim, iteration: int) -> DbRecorder:
    """The recorder of an iteration just claimed: it carries the claim's attempt, fenced once half the lease has
    passed since the claim. Until then no other task can have taken the iteration over (that needs the lease to
    run out, by the claimer's clock or a sweeper's a few seconds apart), so a write needs no check."""
    execution = claim.execution
    return DbRecorder(session_id=execution.session_id, stage_id=execution.stage_id, execution_id=execution.id,
                      iteration=iteration, attempt=execution.attempt,
                      unfenced_until=claim.started + executions.lease_seconds(execution) / 2,
                      next_event_sequence=_next_event_sequence(execution),
                      claimed_call=claim.call, conversation=claim.conversation)


def _next_event_sequence(execution: AgentExecution) -> int | None:
    """The claim read the execution's last timeline number (None after a discard: the recorder looks it up)."""
    last = execution.last_event_sequence
    return None if last is None else last + 1


def _step(execution: AgentExecution, iteration: int, recorder: DbRecorder, calls: IterationCalls) -> StepOutcome:
    """Run the claimed iteration's step; a timeout or a crash becomes its outcome. `calls`: what an orchestrator's
    tool calls ask of its sub-agents, carried out when the iteration completes."""
    started = time.monotonic()
    ctx = None
    try:
        ctx = build_execution_context(execution, iteration, recorder, stop_checked=True, calls=calls)
        outcome = controller_for(ctx.config.iteration_strategy).step(ctx)
    except SoftTimeLimitExceeded:
        outcome = timeout_outcome(_state(execution), f"Iteration {iteration} exceeded its time limit "
                                                     f"({execution.iteration_timeout_s:.0f}s)")
        recorder.flush_after_failure()
        recorder.add_event("error", outcome.error, {"timeout": True}, status="timed_out")
    except (*LOST_CONNECTION, AttemptSuperseded):
        raise  # the database went away (the task retries the iteration), or another attempt holds it
    except Exception as exc:  # a bug or an unexpected outside failure: record it, never leave the step hanging
        log.exception("execution %s iteration %s crashed", execution.id, iteration)
        outcome = StepOutcome(StepStatus.FAILED, error=mask_text(f"Internal error: {type(exc).__name__}: {exc}"))
        recorder.flush_after_failure()
        recorder.add_event("error", outcome.error, {"internal": True}, status="failed")
    finally:
        if ctx is not None:
            ctx.liveness.end()  # the process's heartbeat thread stops beating for it
    ITERATION_SECONDS.labels(execution.iteration_strategy).observe(time.monotonic() - started)
    return outcome


def _state(execution: AgentExecution):
    from agents.context import IterationState

    return IterationState(iteration=execution.current_iteration, max_iterations=execution.max_iterations,
                          consecutive_timeouts=execution.consecutive_timeouts,
                          last_interaction_failed=execution.last_interaction_failed)


# ---- 7. complete, decide, enqueue ----------------------------------------------------------------------


def iteration_finish(execution_id: Any, iteration: int, outcome: StepOutcome, timeout: float = 0.0,
                     recorder: DbRecorder | None = None, calls: IterationCalls | None = None, *,
                     claimed: AgentExecution | None = None) -> None:
    """Mark the iteration done (once), then carry out what follows it. The recorder's last batch and the
    iteration's tokens commit with the completion: an iteration is either done with everything it recorded, or
    not done at all. `claimed`: the row the claim read, so an execution that ends is not read again."""
    with transaction.atomic():
        completed = executions.iteration_complete(
            execution_id=execution_id, iteration=iteration, consecutive_timeouts=outcome.consecutive_timeouts,
            last_interaction_failed=outcome.last_interaction_failed,
            recorded=recorder.batch if recorder is not None else None)
        if completed:
            _what_follows(execution_id, iteration, outcome, timeout, calls, claimed)
    if not completed and recorder is not None:
        # A later attempt took the iteration over while this one ran without writing (a whole reply, no tool):
        # its calls go on the record as superseded and AttemptSuperseded says so, as a refused write would.
        recorder.batch.taken_over_check()


def _what_follows(execution_id: Any, iteration: int, outcome: StepOutcome, timeout: float,
                  calls: IterationCalls | None, claimed: AgentExecution | None) -> None:
    """In the completion's transaction: the next iteration, the execution's end, or a park."""
    planned = next_after_iteration(execution_id, iteration, outcome, timeout)
    if calls is not None and calls.action_agent:
        proposals_apply(execution_id, iteration, calls)
    decision = _orchestrator_next(execution_id, iteration, planned, calls) \
        if calls is not None and calls.orchestrator else planned
    if decision is not None and calls is not None and calls.action_agent:
        decision = action_next(execution_id, iteration, decision)
    if decision is None:
        return  # parked: a sub-agent's end, or a decision on its action proposal, wakes it
    if isinstance(decision, RunIteration):
        enact_on_commit([decision])
        return
    # The claim's read stands in for a second one while the session has no action proposals: none when it
    # read, none written since.
    proposed = (calls is not None and calls.action_agent) or (claimed is not None and claimed.session_has_actions)
    execution_end(execution_id=decision.execution_id, status=decision.status, error=decision.error,
                  final_analysis=decision.final_analysis, claimed=None if proposed else claimed)


def next_after_iteration(execution_id: Any, iteration: int, outcome: StepOutcome,
                         timeout: float) -> RunIteration | EndExecution:
    """A step that continues runs the next iteration (`timeout`: its limit, 0 for the default); any other
    outcome ends the execution with the outcome's status."""
    if outcome.status is StepStatus.CONTINUE:
        return RunIteration(str(execution_id), iteration + 1, timeout)
    return EndExecution(str(execution_id), _OUTCOME_TO_STATUS[outcome.status], error=outcome.error,
                        final_analysis=outcome.final_analysis)


def _orchestrator_next(execution_id: Any, iteration: int, decision: RunIteration | EndExecution,
                       calls: IterationCalls) -> RunIteration | EndExecution | None:
    """An orchestrator's calls take effect with its iteration's completion; then it goes on, ends or parks."""
    dispatches_apply(execution_id, calls)
    for child_id in calls.cancels:
        execution_end(execution_id=child_id, status=ExecStatus.CANCELLED, error="Cancelled by its orchestrator")
    return orchestrator_next(execution_id, iteration, decision, calls)
