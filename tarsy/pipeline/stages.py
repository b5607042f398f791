"""Stages: create them with their executions, join them through the database, advance the chain.

Parallel executions join on a row lock of their Stage (not a Celery chord), so
any worker may finish any execution and exactly one of them advances the chain.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.config.registry import TarsyConfig
from agents.context import resolve_agent
from tarsy.config import get_config
from tarsy.models import (
    TERMINAL_EXEC_STATUSES,
    AgentExecution,
    AlertSession,
    ChatUserMessage,
    ExecStatus,
    ParallelType,
    Stage,
    StageKind,
)
from tarsy.streaming.publisher import publish

log = logging.getLogger(__name__)


def stage_payload(stage: Stage) -> dict[str, Any]:
    return {
        "session_id": str(stage.session_id),
        "stage_id": stage.id,
        "stage_name": stage.name,
        "stage_index": stage.index,
        "kind": stage.kind,
        "status": stage.status,
        "parallel_type": stage.parallel_type,
        "error_message": stage.error_message,
        "executions": [
            {"id": str(e.id), "agent_name": e.agent_name, "status": e.status, "llm_provider": e.llm_provider,
             "iteration_strategy": e.iteration_strategy}
            for e in stage.executions.all()
        ],
    }


def _enqueue_first_iterations(executions: list[AgentExecution]) -> None:
    from tarsy.tasks import enqueue_iteration

    work = [(str(e.id), e.iteration_timeout_s) for e in executions]
    transaction.on_commit(lambda: [enqueue_iteration(eid, 1, timeout) for eid, timeout in work])


def _create_stage(session: AlertSession, *, name: str, kind: str, agents: list[dict[str, Any]],
                  chain_stage_index: int | None = None, parallel_type: str | None = None,
                  success_policy: str | None = None, chat_message: ChatUserMessage | None = None) -> Stage:
    """`agents`: [{display, config_name, resolve kwargs}] — resolved now so a config change mid-run is visible."""
    config = get_config()
    index = Stage.objects.filter(session=session).count()
    now = timezone.now()
    stage = Stage.objects.create(
        session=session, name=name, index=index, kind=kind, chain_stage_index=chain_stage_index,
        expected_agent_count=len(agents), parallel_type=parallel_type, success_policy=success_policy,
        status=ExecStatus.ACTIVE, started_at=now, chat_message=chat_message,
    )
    executions = []
    for i, spec in enumerate(agents):
        resolved = resolve_agent(config, agent_name=spec["config_name"], mcp_selection=session.mcp_selection,
                                 **spec.get("resolve", {}))
        executions.append(AgentExecution.objects.create(
            stage=stage, session=session, agent_name=spec["display"], agent_config_name=spec["config_name"],
            agent_index=i, iteration_strategy=resolved.iteration_strategy,
            llm_provider=resolved.llm_provider_name, llm_backend=resolved.llm_backend,
            max_iterations=resolved.max_iterations, iteration_timeout_s=resolved.iteration_timeout,
        ))
    if kind != StageKind.CHAT:
        AlertSession.all_objects.filter(id=session.id).update(current_stage_index=index)
    publish("stage.started", stage_payload(stage), session_id=session.id)
    _enqueue_first_iterations(executions)
    return stage


def stage_start_chain(session: AlertSession, chain_stage_index: int) -> Stage:
    config = get_config()
    stage_cfg = config.chain(session.chain_id).stages[chain_stage_index]
    base = {"chain_id": session.chain_id, "stage_index": chain_stage_index}
    if stage_cfg.replicas > 1:
        agent = stage_cfg.agents[0]
        agents = [{"display": f"{agent.name}-{n}", "config_name": agent.name,
                   "resolve": {**base, "stage_agent_index": 0}} for n in range(1, stage_cfg.replicas + 1)]
        parallel = ParallelType.REPLICA
    else:
        agents = [{"display": a.name, "config_name": a.name, "resolve": {**base, "stage_agent_index": i}}
                  for i, a in enumerate(stage_cfg.agents)]
        parallel = ParallelType.MULTI_AGENT if len(agents) > 1 else None
    policy = stage_cfg.success_policy or config.defaults.success_policy
    return _create_stage(session, name=stage_cfg.name, kind=StageKind.INVESTIGATION, agents=agents,
                         chain_stage_index=chain_stage_index, parallel_type=parallel,
                         success_policy=policy if parallel else None)


def stage_start_synthesis(session: AlertSession, parallel_stage: Stage) -> Stage:
    config = get_config()
    stage_cfg = config.chain(session.chain_id).stages[parallel_stage.chain_stage_index]
    synthesis = stage_cfg.synthesis
    agent_name = synthesis.agent if synthesis else "SynthesisAgent"
    resolve = {"strategy_override": synthesis.iteration_strategy if synthesis else "synthesis",
               "provider_override": (synthesis.llm_provider if synthesis else None)
               or _chain_provider(config, session.chain_id)}
    return _create_stage(session, name=f"{parallel_stage.name} - synthesis", kind=StageKind.SYNTHESIS,
                         agents=[{"display": agent_name, "config_name": agent_name, "resolve": resolve}],
                         chain_stage_index=parallel_stage.chain_stage_index)


def stage_start_chat(session: AlertSession, message: ChatUserMessage) -> Stage:
    config = get_config()
    chat_cfg = config.chain(session.chain_id).chat
    resolve = {"strategy_override": chat_cfg.iteration_strategy,
               "provider_override": chat_cfg.llm_provider or _chain_provider(config, session.chain_id)}
    return _create_stage(session, name="chat", kind=StageKind.CHAT, chat_message=message,
                         agents=[{"display": chat_cfg.agent, "config_name": chat_cfg.agent, "resolve": resolve}])


def _chain_provider(config: TarsyConfig, chain_id: str) -> str | None:
    return config.chain(chain_id).llm_provider


# ---- termination and join ------------------------------------------------------

def aggregate_status(statuses: list[str], policy: str | None) -> str:
    """any: one success suffices; all: every execution must succeed. A failure is timed_out or
    cancelled only when every failure was of that kind."""
    completed = [s for s in statuses if s == ExecStatus.COMPLETED]
    failures = [s for s in statuses if s != ExecStatus.COMPLETED]
    if not failures or (policy == "any" and completed):
        return ExecStatus.COMPLETED
    for kind in (ExecStatus.TIMED_OUT, ExecStatus.CANCELLED):
        if all(s == kind for s in failures):
            return kind
    return ExecStatus.FAILED


def execution_mark_terminal(*, execution_id: Any, status: str, error: str = "", final_analysis: str = "") -> bool:
    """Compare-and-set to a terminal status, then try to join the stage. False if it was already terminal."""
    with transaction.atomic():
        updated = AgentExecution.objects.filter(id=execution_id).exclude(status__in=TERMINAL_EXEC_STATUSES).update(
            status=status, error_message=error, final_analysis=final_analysis, completed_at=timezone.now(),
            lease_expires_at=None,
        )
        if not updated:
            return False
        stage_id = AgentExecution.objects.filter(id=execution_id).values_list("stage_id", flat=True).get()
        stage_join(stage_id=stage_id)
    return True


def stage_join(*, stage_id: int) -> Stage | None:
    """Called inside a transaction; the last execution to finish closes the stage and advances the session."""
    stage = Stage.objects.select_for_update().get(id=stage_id)
    if stage.status in TERMINAL_EXEC_STATUSES:
        return None
    executions = list(stage.executions.all())
    if any(e.status not in TERMINAL_EXEC_STATUSES for e in executions):
        return None
    status = aggregate_status([e.status for e in executions], stage.success_policy)
    stage.status = status
    stage.completed_at = timezone.now()
    if status == ExecStatus.COMPLETED:
        finals = [e.final_analysis for e in executions if e.status == ExecStatus.COMPLETED and e.final_analysis]
        stage.final_analysis = finals[0] if len(finals) == 1 else "\n\n".join(finals)
    else:
        stage.error_message = "; ".join(f"{e.agent_name}: {e.error_message or e.status}"
                                        for e in executions if e.status != ExecStatus.COMPLETED)
    stage.save(update_fields=["status", "completed_at", "final_analysis", "error_message"])
    publish("stage.completed", stage_payload(stage), session_id=stage.session_id)
    _advance(stage)
    return stage


def _advance(stage: Stage) -> None:
    from tarsy.pipeline.chat import chat_stage_finished
    from tarsy.tasks import finish_session

    session = AlertSession.all_objects.select_for_update().get(id=stage.session_id)
    if stage.kind == StageKind.CHAT:
        chat_stage_finished(stage)
        return
    session_id = str(session.id)
    if session.status != "in_progress" or stage.status != ExecStatus.COMPLETED:
        transaction.on_commit(lambda: finish_session.delay(session_id))
        return
    if stage.kind == StageKind.INVESTIGATION and stage.parallel_type:
        stage_start_synthesis(session, stage)
        return
    next_index = (stage.chain_stage_index or 0) + 1
    if next_index < len(get_config().chain(session.chain_id).stages):
        stage_start_chain(session, next_index)
    else:
        transaction.on_commit(lambda: finish_session.delay(session_id))
