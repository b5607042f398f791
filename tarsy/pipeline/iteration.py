"""One agent iteration as one task: guard, discard an interrupted attempt, step, record, enqueue the next.

Idempotent by state: `iterations_completed` says which iterations are done and a
lease says a task is working on the current one, so a redelivered or duplicated
task does nothing, and a resumed one first removes what its crashed predecessor
wrote (no duplicate rows).
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from agents.mcp.masking.boundary import mask_text
from controllers.base import StepOutcome, StepStatus, timeout_outcome
from controllers.registry import controller_for
from tarsy.metrics import ITERATION_SECONDS
from tarsy.models import (
    AgentExecution,
    AlertSession,
    ExecStatus,
    LLMInteraction,
    MCPInteraction,
    Message,
    SessionStatus,
    StageKind,
    TimelineEvent,
)
from tarsy.services import interactions, timeline
from tarsy.services.recorder import HEARTBEAT_INTERVAL_S, DbRecorder

from .execution_context import build_execution_context, session_deadline
from .stages import execution_mark_terminal

log = logging.getLogger(__name__)

_OUTCOME_TO_STATUS = {
    StepStatus.COMPLETED: ExecStatus.COMPLETED,
    StepStatus.FAILED: ExecStatus.FAILED,
    StepStatus.TIMED_OUT: ExecStatus.TIMED_OUT,
    StepStatus.CANCELLED: ExecStatus.CANCELLED,
}


def _discard_attempt(execution_id: Any, iteration: int) -> None:
    Message.objects.filter(execution_id=execution_id, iteration=iteration).delete()
    calls = LLMInteraction.objects.filter(execution_id=execution_id, iteration=iteration)
    interactions.token_totals_subtract(execution_id=execution_id, rows=list(calls))
    calls.delete()
    MCPInteraction.objects.filter(execution_id=execution_id, iteration=iteration).delete()
    timeline.timeline_events_discard_iteration(execution_id=execution_id, iteration=iteration)


def _stop_status(execution: AgentExecution) -> tuple[str, str] | None:
    """Why an execution must not start another iteration, if it must not."""
    session = execution.session
    if execution.stage.kind == StageKind.CHAT:
        return None
    if session.status in (SessionStatus.CANCELLING, SessionStatus.CANCELLED):
        return ExecStatus.CANCELLED, "Cancelled by user"
    deadline = session_deadline(session)
    if session.status == SessionStatus.TIMED_OUT or (deadline and timezone.now().timestamp() > deadline):
        return ExecStatus.TIMED_OUT, "Session timeout reached"
    if session.status != SessionStatus.IN_PROGRESS:
        return ExecStatus.CANCELLED, f"Session is {session.status}"
    return None


# Read with the claim: the recorder numbers this iteration's timeline events without a lookup of its own.
_LAST_EVENT_SEQUENCE = Subquery(TimelineEvent.objects.filter(execution_id=OuterRef("pk"))
                                .order_by("-sequence_number").values("sequence_number")[:1])


def iteration_begin(execution_id: Any, iteration: int) -> AgentExecution | None:
    """Claim iteration `iteration` of the execution, or return None when this task has nothing to do."""
    with transaction.atomic():
        claimed = list(AgentExecution.objects.select_for_update(of=("self",)).select_related("stage", "session")
                       .annotate(last_event_sequence=_LAST_EVENT_SEQUENCE).filter(id=execution_id)
                       .order_by())  # by primary key: no ORDER BY, as .first() would add
        execution = claimed[0] if claimed else None
        if execution is None or execution.is_terminal or execution.iterations_completed >= iteration:
            return None
        if iteration != execution.iterations_completed + 1:
            log.warning("execution %s: iteration %s out of order (completed %s)", execution_id, iteration,
                        execution.iterations_completed)
            return None
        now = timezone.now()
        if execution.current_iteration == iteration and execution.lease_expires_at and execution.lease_expires_at > now:
            return None  # another task holds this iteration; the sweeper takes over if it dies
        stop = _stop_status(execution)
        execution.next_event_sequence = (execution.last_event_sequence or 0) + 1
        if stop is None and execution.current_iteration == iteration:
            _discard_attempt(execution.id, iteration)
            execution.next_event_sequence = None  # numbering continues after what is left: the recorder looks it up
        if stop is None:
            lease = execution.iteration_timeout_s + settings.ITERATION_HARD_LIMIT_GRACE_S
            execution.current_iteration = iteration
            execution.status = ExecStatus.ACTIVE
            execution.started_at = execution.started_at or now
            execution.last_heartbeat_at = now
            execution.lease_expires_at = now + timedelta(seconds=lease)
            execution.save(update_fields=["current_iteration", "status", "started_at", "last_heartbeat_at",
                                          "lease_expires_at"])
            beat = execution.session.last_heartbeat_at
            if beat is None or (now - beat).total_seconds() >= HEARTBEAT_INTERVAL_S:
                AlertSession.all_objects.filter(id=execution.session_id).update(last_heartbeat_at=now)
            return execution
    execution_mark_terminal(execution_id=execution_id, status=stop[0], error=stop[1])
    return None


def iteration_release(execution_id: Any, iteration: int) -> None:
    """Give up the lease of an unfinished iteration so a retried task can claim it at once."""
    AgentExecution.objects.filter(id=execution_id, current_iteration=iteration,
                                  iterations_completed__lt=iteration).update(lease_expires_at=None)


def iteration_run(execution_id: Any, iteration: int) -> StepOutcome | None:
    execution = iteration_begin(execution_id, iteration)
    if execution is None:
        return None
    recorder = DbRecorder(session_id=execution.session_id, stage_id=execution.stage_id, execution_id=execution.id,
                          iteration=iteration, session_deadline=None if execution.stage.kind == StageKind.CHAT
                          else session_deadline(execution.session),
                          next_event_sequence=execution.next_event_sequence, stop_checked=True)
    started = time.monotonic()
    try:
        ctx = build_execution_context(execution, iteration, recorder)
        outcome = controller_for(ctx.config.iteration_strategy).step(ctx)
    except SoftTimeLimitExceeded:
        outcome = timeout_outcome(_state(execution), f"Iteration {iteration} exceeded its time limit "
                                                     f"({execution.iteration_timeout_s:.0f}s)")
        recorder.flush_after_failure()
        recorder.add_event("error", outcome.error, {"timeout": True}, status="timed_out")
    except (OperationalError, InterfaceError):
        raise  # the database went away: the task retries the iteration (tarsy.tasks)
    except Exception as exc:  # a bug or an unexpected outside failure: record it, never leave the step hanging
        log.exception("execution %s iteration %s crashed", execution_id, iteration)
        outcome = StepOutcome(StepStatus.FAILED, error=mask_text(f"Internal error: {type(exc).__name__}: {exc}"))
        recorder.flush_after_failure()
        recorder.add_event("error", outcome.error, {"internal": True}, status="failed")
    ITERATION_SECONDS.labels(execution.iteration_strategy).observe(time.monotonic() - started)
    iteration_finish(execution_id, iteration, outcome, execution.iteration_timeout_s, recorder)
    return outcome


def _state(execution: AgentExecution):
    from agents.context import IterationState

    return IterationState(iteration=execution.current_iteration, max_iterations=execution.max_iterations,
                          consecutive_timeouts=execution.consecutive_timeouts,
                          last_interaction_failed=execution.last_interaction_failed)


def iteration_finish(execution_id: Any, iteration: int, outcome: StepOutcome, timeout: float = 0.0,
                     recorder: DbRecorder | None = None) -> None:
    """Mark the iteration done (once); enqueue the next one or end the execution. `timeout`: the next task's
    limit (0: the configured default). The recorder's last batch commits with the completion: an iteration
    is either done with everything it recorded, or not done at all."""
    from tarsy.tasks import enqueue_iteration

    with transaction.atomic():
        updated = AgentExecution.objects.filter(id=execution_id, iterations_completed=iteration - 1).update(
            iterations_completed=iteration, consecutive_timeouts=outcome.consecutive_timeouts,
            last_interaction_failed=outcome.last_interaction_failed, last_heartbeat_at=timezone.now(),
            lease_expires_at=None, **(recorder.execution_token_changes() if recorder else {}),
        )
        if not updated:
            return
        if recorder is not None:
            recorder.flush(execution_totals=False)  # the UPDATE above added the execution's tokens
        if outcome.status is StepStatus.CONTINUE:
            transaction.on_commit(lambda: enqueue_iteration(str(execution_id), iteration + 1, timeout))
            return
        execution_mark_terminal(execution_id=execution_id, status=_OUTCOME_TO_STATUS[outcome.status],
                                error=outcome.error, final_analysis=outcome.final_analysis)
