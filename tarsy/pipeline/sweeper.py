"""The periodic safety net: lost tasks, dead workers, session timeouts, cancellations.

A worker killed mid-iteration (SIGKILL, OOM, node loss) leaves its iteration
leased; once the lease expires the iteration is re-enqueued (and the retry
discards the half-written attempt). A lost queued message (Redis restart) shows
as an execution without a lease and without a heartbeat for the orphan
threshold, and is re-enqueued too. Duplicates are harmless:
every task is guarded by state.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from tarsy.config import get_config
from tarsy.models import (
    TERMINAL_EXEC_STATUSES,
    AgentExecution,
    AlertSession,
    ExecStatus,
    SessionStatus,
    Stage,
    StageKind,
)
from tarsy.services import timeline
from tarsy.services.sessions import session_set_status

from .dispatch import dispatch_pending
from .finish import session_finish, stop_session_work
from .stages import execution_mark_terminal

log = logging.getLogger(__name__)


def sweep_once() -> dict[str, int]:
    counts = {"dispatched": len(dispatch_pending())}
    counts["timed_out"] = _time_out_sessions()
    for session_id in AlertSession.all_objects.filter(status=SessionStatus.CANCELLING).values_list("id", flat=True):
        reap_cancelled(session_id=session_id)
    counts["resumed"] = _resume_orphans()
    counts["finished"] = _finish_stalled_sessions()
    return counts


def _time_out_sessions() -> int:
    timeout = get_config().defaults.session_timeout
    cutoff = timezone.now() - timedelta(seconds=timeout)
    count = 0
    for session in AlertSession.all_objects.filter(status=SessionStatus.IN_PROGRESS, started_at__lt=cutoff):
        with transaction.atomic():
            changed = session_set_status(session_id=session.id, status=SessionStatus.TIMED_OUT,
                                         from_statuses=(SessionStatus.IN_PROGRESS,),
                                         error_message=f"Session timeout ({timeout:.0f}s) reached")
            if changed:
                stop_session_work(session_id=session.id, status=ExecStatus.TIMED_OUT, error="Session timeout reached")
                timeline.timeline_event_create(session_id=session.id, event_type="error", status="timed_out",
                                               content=f"Session timed out after {timeout:.0f}s",
                                               metadata={"session_timeout": True})
                count += 1
    return count


def reap_cancelled(*, session_id: Any) -> None:
    """Cancel every execution of a cancelling session that no task is working on; a running step stops itself."""
    now = timezone.now()
    idle = AgentExecution.objects.filter(session_id=session_id).exclude(status__in=TERMINAL_EXEC_STATUSES).filter(
        Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
    for execution_id in idle.values_list("id", flat=True):
        execution_mark_terminal(execution_id=execution_id, status=ExecStatus.CANCELLED, error="Cancelled by user")
    if not AgentExecution.objects.filter(session_id=session_id).exclude(status__in=TERMINAL_EXEC_STATUSES).exists():
        session_finish(session_id=session_id)


def _resume_orphans() -> int:
    from tarsy.tasks import enqueue_iteration

    queue = get_config().queue
    now = timezone.now()
    stale = now - timedelta(seconds=queue.orphan_threshold)
    live = Q(session__status=SessionStatus.IN_PROGRESS) | Q(stage__kind=StageKind.CHAT)
    running = AgentExecution.objects.filter(live).exclude(status__in=TERMINAL_EXEC_STATUSES)
    # A task died mid-iteration: its lease ran out. A queued task got lost (broker restart, or a resume whose
    # task never started): no lease, and no sign of life for the orphan threshold.
    crashed = running.filter(lease_expires_at__lt=now)
    lost = running.filter(lease_expires_at__isnull=True).filter(
        Q(last_heartbeat_at__lt=stale) | Q(last_heartbeat_at__isnull=True, created_at__lt=stale))
    resumed = 0
    for execution in list(crashed) + list(lost):
        with transaction.atomic():
            # Clearing the lease lets the re-enqueued task claim the iteration, and stops the next sweep from
            # resuming it again before it had a chance to start.
            bumped = AgentExecution.objects.filter(id=execution.id, resume_count=execution.resume_count).update(
                resume_count=F("resume_count") + 1, last_heartbeat_at=now, lease_expires_at=None)
        if not bumped:
            continue
        if execution.resume_count + 1 > queue.max_resumes:
            execution_mark_terminal(execution_id=execution.id, status=ExecStatus.FAILED,
                                    error=f"Lost its worker {execution.resume_count + 1} times; giving up")
            continue
        iteration = max(execution.current_iteration, execution.iterations_completed + 1)
        log.warning("resuming execution %s at iteration %s (resume %s)", execution.id, iteration,
                    execution.resume_count + 1)
        enqueue_iteration(str(execution.id), iteration, execution.iteration_timeout_s)
        resumed += 1
    return resumed


def _finish_stalled_sessions() -> int:
    """In-progress sessions whose stages are all done but whose finishing task was lost."""
    from tarsy.tasks import finish_session

    stale = timezone.now() - timedelta(seconds=get_config().queue.orphan_threshold)
    count = 0
    for session in AlertSession.all_objects.filter(status=SessionStatus.IN_PROGRESS, last_heartbeat_at__lt=stale):
        stages = Stage.objects.filter(session=session).exclude(kind=StageKind.CHAT)
        if stages.exists() and not stages.exclude(status__in=TERMINAL_EXEC_STATUSES).exists():
            AlertSession.all_objects.filter(id=session.id).update(last_heartbeat_at=timezone.now())
            finish_session.delay(str(session.id))
            count += 1
    return count
