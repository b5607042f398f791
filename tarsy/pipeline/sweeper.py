"""The periodic safety net: lost tasks, dead workers, session timeouts, cancellations.

A worker killed mid-iteration (SIGKILL, OOM, node loss) leaves its iteration
leased; once the lease expires the iteration is re-enqueued (and the retry
discards the half-written attempt). A queued message lost inside the broker (a
Redis that restarted without its data) shows as an execution without a lease
and without a heartbeat for the orphan threshold, and is re-enqueued too; work
decided while the broker was unreachable never gets here, the outbox relay sends
it (tarsy/outbox.py). Duplicates are harmless: every task is guarded by state.

This module decides what to resume, time out, reap or finish; the writes go
through tarsy.services, the re-enqueues through the enactor.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from tarsy.config import get_config
from tarsy.decisions import EndExecution, FinishSession, RunIteration, SlackDeliver, enact_on_commit
from tarsy.models import AgentExecution, ExecStatus, SessionStatus
from tarsy.services import actions as action_rows
from tarsy.services import executions, interactions, sessions, slack, stages, timeline
from tarsy.services import sub_agents as sub_agent_rows

from .actions.decisions import expired_wake
from .dispatch import dispatch_pending
from .finish import session_finish
from .redrive import next_iteration
from .stages import execution_end
from .sub_agents.decisions import stranded_wake

log = logging.getLogger(__name__)


def sweep_once() -> dict[str, int]:
    counts = {"dispatched": len(dispatch_pending())}
    counts["timed_out"] = _time_out_sessions()
    for session_id in sessions.sessions_cancelling():
        reap_cancelled(session_id=session_id)
    counts["sub_agents_timed_out"] = _time_out_sub_agents()
    counts["orchestrators_woken"] = stranded_wake()
    counts["actions_expired"] = expired_wake()
    counts["resumed"] = _resume_orphans()
    counts["calls_interrupted"] = interactions.llm_calls_close_interrupted(now=timezone.now())
    counts["finished"] = _finish_stalled_sessions()
    counts["slack"] = _redeliver_slack()
    return counts


def _time_out_sessions() -> int:
    """In-progress sessions past their session_timeout, not counting the time a proposal waited for a person (the
    clock stops meanwhile: an approval may take hours)."""
    timeout = get_config().defaults.session_timeout
    now = timezone.now()
    count = 0
    for session in sessions.sessions_running_since(before=now - timedelta(seconds=timeout)):
        ran = (now - (session.started_at or now)).total_seconds()
        if ran - action_rows.actions_wait_s(session_id=session.id, now=now) <= timeout:
            continue
        with transaction.atomic():
            changed = sessions.session_set_status(session_id=session.id, status=SessionStatus.TIMED_OUT,
                                                  from_statuses=(SessionStatus.IN_PROGRESS,),
                                                  error_message=f"Session timeout ({timeout:.0f}s) reached")
            if changed:
                sessions.session_work_stop(session_id=session.id, status=ExecStatus.TIMED_OUT,
                                           error="Session timeout reached")
                timeline.timeline_event_create(session_id=session.id, event_type="error", status="timed_out",
                                               content=f"Session timed out after {timeout:.0f}s",
                                               metadata={"session_timeout": True})
                count += 1
    return count


def _time_out_sub_agents() -> int:
    """Sub-agents past their deadline (orchestrator.timeout) end as timed out; their orchestrator hears of it."""
    expired = sub_agent_rows.sub_agents_expired(now=timezone.now())
    for execution_id in expired:
        execution_end(execution_id=execution_id, status=ExecStatus.TIMED_OUT, error="Sub-agent timeout reached")
    return len(expired)


def reap_cancelled(*, session_id: Any) -> None:
    """Cancel every execution of a cancelling session that no task is working on; a running step stops itself."""
    for execution_id in executions.executions_idle(session_id=session_id, now=timezone.now()):
        execution_end(execution_id=execution_id, status=ExecStatus.CANCELLED, error="Cancelled by user")
    if not executions.executions_unfinished_exist(session_id=session_id):
        session_finish(session_id=session_id)


def resume_decision(execution: AgentExecution, max_resumes: int) -> RunIteration | EndExecution:
    """An orphaned execution whose resume was just counted: run its current iteration again, or give up once
    it has lost its worker more than `max_resumes` times."""
    resumes = execution.resume_count + 1
    if resumes > max_resumes:
        return EndExecution(str(execution.id), ExecStatus.FAILED, error=f"Lost its worker {resumes} times; giving up")
    return RunIteration(str(execution.id), next_iteration(execution), execution.iteration_timeout_s)


def _resume_orphans() -> int:
    queue = get_config().queue
    now = timezone.now()
    resumed = 0
    for execution in executions.executions_orphaned(now=now, stale=now - timedelta(seconds=queue.orphan_threshold)):
        if not executions.execution_resume_mark(execution=execution, now=now):
            continue
        decision = resume_decision(execution, queue.max_resumes)
        if isinstance(decision, EndExecution):
            execution_end(execution_id=decision.execution_id, status=decision.status, error=decision.error)
            continue
        log.warning("resuming execution %s at iteration %s (resume %s)", execution.id, decision.iteration,
                    execution.resume_count + 1)
        enact_on_commit([decision])
        resumed += 1
    return resumed


def _finish_stalled_sessions() -> int:
    """In-progress sessions whose stages are all done but whose finishing task was lost."""
    stale = timezone.now() - timedelta(seconds=get_config().queue.orphan_threshold)
    count = 0
    for session in sessions.sessions_silent_since(before=stale):
        if stages.stages_all_closed(session_id=session.id):
            sessions.session_touch(session_id=session.id)
            enact_on_commit([FinishSession(str(session.id))])
            count += 1
    return count


def _redeliver_slack() -> int:
    """Slack work whose delivery task was lost (a worker died holding the lease, a queued retry vanished)."""
    config = get_config().slack
    if config is None or not config.enabled:
        return 0
    stalled = slack.slack_threads_stalled(now=timezone.now())
    enact_on_commit([SlackDeliver(str(session_id)) for session_id in stalled])
    return len(stalled)
