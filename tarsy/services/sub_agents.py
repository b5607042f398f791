"""Sub-agents: the executions an orchestrator dispatched, and the orchestrator's park and wake.

A sub-agent is an AgentExecution of its orchestrator's stage with `parent_execution` set (the stage's join leaves
it out). An orchestrator with nothing to do but wait is parked (`waiting`, no task in flight); the sub-agent's end
wakes it under the orchestrator's row lock, so two sub-agents ending together wake it once. What this means for
what happens next is decided in tarsy.pipeline.sub_agents.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from agents.context import resolve_agent
from agents.timeline_events import TimelineEventType
from tarsy.config import get_config
from tarsy.models import (
    TERMINAL_EXEC_STATUSES,
    ActionProposal,
    AgentExecution,
    ExecStatus,
    ProposalStatus,
    StageKind,
    TimelineEvent,
)

from .executions import execution_status_publish

_UNFINISHED = ~Q(status__in=TERMINAL_EXEC_STATUSES)


@dataclass(frozen=True)
class SubAgentState:
    """One dispatched sub-agent as `list_agents` shows it."""

    execution_id: str
    agent: str
    status: str
    task: str


def sub_agent_create(*, parent: AgentExecution, execution_id: uuid.UUID, agent: str, task: str,
                     queued: bool, timeout_s: float) -> AgentExecution:
    """A sub-agent of `parent` in its stage, resolved from its own agent config (its MCP servers, provider and
    strategy, or its entry's in an orchestrate stage); `queued` ones wait for a free slot and get their deadline when
    they start."""
    investigating = parent.stage.kind == StageKind.INVESTIGATION  # not a chat reply's
    resolved = resolve_agent(get_config(), agent_name=agent, mcp_selection=parent.session.mcp_selection,
                             **sub_agent_stage_entry(chain_id=parent.session.chain_id, stage_index=(
                                 parent.stage.chain_stage_index if investigating else None),
                                 depth=parent.depth + 1, agent=agent))
    now = timezone.now()
    child = AgentExecution.objects.create(
        id=execution_id, stage_id=parent.stage_id, session_id=parent.session_id, agent_name=agent,
        agent_config_name=agent, agent_index=AgentExecution.objects.filter(stage_id=parent.stage_id).count(),
        iteration_strategy=resolved.iteration_strategy, llm_provider=resolved.llm_provider_name,
        llm_backend=resolved.llm_backend, max_iterations=resolved.max_iterations,
        iteration_timeout_s=resolved.iteration_timeout, parent_execution=parent, task=task, depth=parent.depth + 1,
        status=ExecStatus.QUEUED if queued else ExecStatus.PENDING,
        deadline_at=None if queued else now + timedelta(seconds=timeout_s), last_heartbeat_at=now,
    )
    execution_status_publish(execution_id=child.id)
    return child


def sub_agent_stage_entry(*, chain_id: str, stage_index: int | None, depth: int, agent: str) -> dict[str, Any]:
    """Where a sub-agent's settings come from besides its agent config: a stage with `orchestrate: true` lists its
    agents with their settings (provider, strategy, servers, limits), and the sub-agents its orchestrator dispatches
    (depth 1: that orchestrator is the stage's only top-level execution) run with them, as the stage's agents would
    in parallel. {} for any other sub-agent (its own agent config only)."""
    chain = get_config().chains.get(chain_id)
    if depth != 1 or chain is None or stage_index is None or stage_index >= len(chain.stages) \
            or not chain.stages[stage_index].orchestrate:
        return {}
    names = [entry.name for entry in chain.stages[stage_index].agents]
    if agent not in names:
        return {}
    return {"chain_id": chain_id, "stage_index": stage_index, "stage_agent_index": names.index(agent)}


def sub_agent_start(*, execution_id: Any, timeout_s: float) -> bool:
    """A queued sub-agent takes its slot (compare-and-set): it is pending its first iteration from now on."""
    now = timezone.now()
    started = bool(AgentExecution.objects.filter(id=execution_id, status=ExecStatus.QUEUED).update(
        status=ExecStatus.PENDING, deadline_at=now + timedelta(seconds=timeout_s), last_heartbeat_at=now))
    if started:
        execution_status_publish(execution_id=execution_id)
    return started


def sub_agents_of(*, parent_id: Any) -> list[SubAgentState]:
    rows = AgentExecution.objects.filter(parent_execution_id=parent_id).order_by("created_at", "agent_index")
    return [SubAgentState(execution_id=str(r.id), agent=r.agent_config_name, status=r.status, task=r.task)
            for r in rows]


def sub_agents_unfinished(*, parent_id: Any) -> list[Any]:
    """Ids of the sub-agents still queued or running."""
    return list(AgentExecution.objects.filter(_UNFINISHED, parent_execution_id=parent_id).values_list("id", flat=True))


def sub_agents_running_count(*, parent_id: Any) -> int:
    """Sub-agents holding a slot (started, not finished)."""
    return AgentExecution.objects.filter(_UNFINISHED, parent_execution_id=parent_id).exclude(
        status=ExecStatus.QUEUED).count()


def sub_agent_next_queued(*, parent_id: Any) -> Any | None:
    return (AgentExecution.objects.filter(parent_execution_id=parent_id, status=ExecStatus.QUEUED)
            .order_by("created_at", "agent_index").values_list("id", flat=True).first())


def sub_agent_results_take(*, parent_id: Any, iteration: int) -> list[AgentExecution]:
    """The finished sub-agents whose result the parent's iteration `iteration` is given, marked as given to it.
    A re-run of the same iteration (its first attempt was discarded) gets them again."""
    finished = AgentExecution.objects.filter(parent_execution_id=parent_id, status__in=TERMINAL_EXEC_STATUSES).filter(
        Q(delivered_in_iteration__isnull=True) | Q(delivered_in_iteration=iteration))
    rows = list(finished.order_by("completed_at", "agent_index"))
    AgentExecution.objects.filter(id__in=[r.id for r in rows]).update(delivered_in_iteration=iteration)
    return rows


def sub_agent_results_pending(*, parent_id: Any) -> bool:
    """Finished sub-agents whose result the parent has not been given yet."""
    return AgentExecution.objects.filter(parent_execution_id=parent_id, status__in=TERMINAL_EXEC_STATUSES,
                                         delivered_in_iteration__isnull=True).exists()


def sub_agent_evidence(*, execution_id: Any) -> list[tuple[str, str]]:
    """(evidence id, tool) of the sub-agent's tool results, in order: what its analysis may cite."""
    metadata = (TimelineEvent.objects.filter(execution_id=execution_id, event_type=TimelineEventType.TOOL_RESULT)
                .order_by("sequence_number").values_list("metadata", flat=True))
    return [(m["evidence_id"], f"{m.get('server_name', '')}.{m.get('tool_name', '')}")
            for m in metadata if m and m.get("evidence_id")]


def sub_agent_iteration_timeout(*, execution_id: Any) -> float:
    return AgentExecution.objects.filter(id=execution_id).values_list("iteration_timeout_s", flat=True).get()


def sub_agents_expired(*, now: datetime) -> list[Any]:
    """Unfinished sub-agents past their deadline."""
    return list(AgentExecution.objects.filter(_UNFINISHED, deadline_at__lt=now).values_list("id", flat=True))


def sub_agent_deadline(*, execution_id: Any) -> datetime | None:
    return AgentExecution.objects.filter(id=execution_id).values_list("deadline_at", flat=True).first()


def orchestrators_stranded() -> list[Any]:
    """Parked orchestrators with no sub-agent left running and no action proposal waiting for a person: their wake
    was lost (never expected; the sweep's net)."""
    running = AgentExecution.objects.filter(_UNFINISHED, parent_execution_id=OuterRef("id"))
    proposed = ActionProposal.objects.filter(execution_id=OuterRef("id"), status=ProposalStatus.PENDING)
    return list(AgentExecution.objects.filter(status=ExecStatus.WAITING).exclude(Exists(running))
                .exclude(Exists(proposed))
                .values_list("id", flat=True))
