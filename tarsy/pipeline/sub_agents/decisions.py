"""What follows an orchestrator's iteration (its dispatches created; it goes on, ends or parks), a sub-agent's end
(the orchestrator wakes, a queued sibling starts) and the sweeper's pass (a stranded orchestrator wakes)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from tarsy.decisions import EndExecution, RunIteration, enact_on_commit
from tarsy.models import AgentExecution, ExecStatus
from tarsy.services import executions, sub_agents

from ..iteration_calls import IterationCalls
from ..parked import wake_parked
from .orchestrators import orchestrator_limits


def dispatches_apply(execution_id: Any, calls: IterationCalls) -> None:
    """In the transaction completing the iteration: create the dispatched sub-agents (their first iterations are
    queued on commit). The cancels are the caller's (tarsy.pipeline.iteration ends them)."""
    if not calls.dispatches:
        return
    parent = AgentExecution.objects.select_related("stage", "session").get(id=execution_id)
    timeout = orchestrator_limits(parent).timeout
    for dispatch in calls.dispatches:
        child = sub_agents.sub_agent_create(parent=parent, execution_id=dispatch.execution_id, agent=dispatch.agent,
                                            task=dispatch.task, queued=dispatch.queued, timeout_s=timeout)
        if not dispatch.queued:
            enact_on_commit([RunIteration(str(child.id), 1, child.iteration_timeout_s)])


def orchestrator_next(execution_id: Any, iteration: int, decision: RunIteration | EndExecution,
                      calls: IterationCalls) -> RunIteration | EndExecution | None:
    """After an orchestrator's iteration (its calls applied): None to park it. It parks when its reply only
    dispatched, listed or cancelled (or called nothing), or when it concluded, while sub-agents still run; it goes
    on at once when results arrived during the iteration (it must read them before concluding)."""
    unfinished = bool(sub_agents.sub_agents_unfinished(parent_id=execution_id))
    results = sub_agents.sub_agent_results_pending(parent_id=execution_id)
    concluded = isinstance(decision, EndExecution) and decision.status == ExecStatus.COMPLETED
    idle = not calls.other_calls and (not calls.orchestration_calls or not calls.one_call_per_reply)
    waits = concluded or (isinstance(decision, RunIteration) and idle)
    if not waits:
        return decision
    if results:
        timeout = decision.timeout if isinstance(decision, RunIteration) else 0.0
        return RunIteration(str(execution_id), iteration + 1, timeout)
    if unfinished:
        executions.execution_park(execution_id=execution_id)
        return None
    return decision


def wake(parent_id: Any) -> None:
    """Wake a parked orchestrator (once: under its row lock) and start queued sub-agents in the free slots."""
    parent = wake_parked(parent_id)
    parent = parent or AgentExecution.objects.filter(id=parent_id).first()
    if parent is None or parent.is_terminal:
        return
    limits = orchestrator_limits(parent)
    while sub_agents.sub_agents_running_count(parent_id=parent_id) < limits.max_concurrent:
        queued = sub_agents.sub_agent_next_queued(parent_id=parent_id)
        if queued is None or not sub_agents.sub_agent_start(execution_id=queued, timeout_s=limits.timeout):
            return
        timeout = sub_agents.sub_agent_iteration_timeout(execution_id=queued)
        enact_on_commit([RunIteration(str(queued), 1, timeout)])


def stranded_wake() -> int:
    """Wake parked orchestrators with nothing left running: their wake commits with a sub-agent's end and cannot
    be lost, so this is only the sweeper's net against a parked orchestrator that would hang."""
    stranded = sub_agents.orchestrators_stranded()
    for parent_id in stranded:
        with transaction.atomic():
            wake(parent_id)
    return len(stranded)
