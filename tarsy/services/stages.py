"""Stages: created with their executions (whose first iterations are enqueued on commit), closed by a join.

Parallel executions join on a row lock of their Stage (not a Celery chord), so any worker may finish any
execution and exactly one of them closes the stage. Which stage comes next is decided in
tarsy.pipeline.stages.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from agents.config.builtins import IMPLICIT_ORCHESTRATOR
from agents.config.registry import TarsyConfig
from agents.context import resolve_agent
from tarsy.config import get_config
from tarsy.decisions import RunIteration, enact_on_commit
from tarsy.models import (
    TERMINAL_EXEC_STATUSES,
    AgentExecution,
    AlertSession,
    ChatUserMessage,
    ExecStatus,
    ParallelType,
    Stage,
    StageKind,
    StageType,
)
from tarsy.signals import stage_status_changed

from .events import publish


def stage_payload(stage: Stage) -> dict[str, Any]:
    return {
        "session_id": str(stage.session_id),
        "stage_id": stage.id,
        "stage_name": stage.name,
        "stage_index": stage.index,
        "kind": stage.kind,
        "stage_type": stage.type,  # not "type": the event message's own key
        "status": stage.status,
        "parallel_type": stage.parallel_type,
        "error_message": stage.error_message,
        "executions": [
            {"id": str(e.id), "agent_name": e.agent_name, "status": e.status, "llm_provider": e.llm_provider,
             "iteration_strategy": e.iteration_strategy,
             "parent_execution_id": str(e.parent_execution_id) if e.parent_execution_id else None}
            for e in stage.executions.all()
        ],
    }


def chat_message_payload(*, session_id: Any, message_id: Any, role: str, content: str,
                         stage_id: int | None, status: str) -> dict[str, Any]:
    """A `chat.message` event: the question when it is asked (chats), the answer when its chat stage closes."""
    return {"session_id": str(session_id), "message_id": str(message_id), "role": role, "content": content,
            "stage_id": stage_id, "status": status}


def _stage_create(session: AlertSession, *, name: str, kind: str, agents: list[dict[str, Any]],
                  stage_type: str = StageType.INVESTIGATION, chain_stage_index: int | None = None,
                  parallel_type: str | None = None,
                  success_policy: str | None = None, chat_message: ChatUserMessage | None = None) -> Stage:
    """`agents`: [{display, config_name, resolve kwargs}] — resolved now so a config change mid-run is visible.
    The executions' first iterations are enqueued when the transaction commits."""
    config = get_config()
    index = Stage.objects.filter(session=session).count()
    now = timezone.now()
    stage = Stage.objects.create(
        session=session, name=name, index=index, kind=kind, type=stage_type, chain_stage_index=chain_stage_index,
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
    stage_status_changed.send(sender=Stage, stage=stage)
    enact_on_commit([RunIteration(str(e.id), 1, e.iteration_timeout_s) for e in executions])
    return stage


def stage_start_chain(*, session: AlertSession, chain_stage_index: int) -> Stage:
    """Stage `chain_stage_index` of the session's chain: one execution per agent, or per replica."""
    config = get_config()
    stage_cfg = config.chain(session.chain_id).stages[chain_stage_index]
    base = {"chain_id": session.chain_id, "stage_index": chain_stage_index}
    parallel: ParallelType | None
    if stage_cfg.orchestrate:  # its agents are dispatched by one orchestrator (tarsy.pipeline.sub_agents)
        agents = [{"display": IMPLICIT_ORCHESTRATOR, "config_name": IMPLICIT_ORCHESTRATOR, "resolve": base}]
        parallel = None
    elif stage_cfg.replicas > 1:
        agent = stage_cfg.agents[0]
        agents = [{"display": f"{agent.name}-{n}", "config_name": agent.name,
                   "resolve": {**base, "stage_agent_index": 0}} for n in range(1, stage_cfg.replicas + 1)]
        parallel = ParallelType.REPLICA
    else:
        agents = [{"display": a.name, "config_name": a.name, "resolve": {**base, "stage_agent_index": i}}
                  for i, a in enumerate(stage_cfg.agents)]
        parallel = ParallelType.MULTI_AGENT if len(agents) > 1 else None
    policy = stage_cfg.success_policy or config.defaults.success_policy
    return _stage_create(session, name=stage_cfg.name, kind=StageKind.INVESTIGATION, agents=agents,
                         stage_type=stage_cfg.type, chain_stage_index=chain_stage_index, parallel_type=parallel,
                         success_policy=policy if parallel else None)


def stage_start_synthesis(*, session: AlertSession, parallel_stage: Stage) -> Stage:
    """The synthesis stage over a parallel stage's results."""
    config = get_config()
    stage_cfg = config.chain(session.chain_id).stages[parallel_stage.chain_stage_index]
    synthesis = stage_cfg.synthesis
    agent_name = synthesis.agent if synthesis else "SynthesisAgent"
    resolve = {"strategy_override": synthesis.iteration_strategy if synthesis else "synthesis",
               "provider_override": (synthesis.llm_provider if synthesis else None)
               or _chain_provider(config, session.chain_id)}
    return _stage_create(session, name=f"{parallel_stage.name} - synthesis", kind=StageKind.SYNTHESIS,
                         agents=[{"display": agent_name, "config_name": agent_name, "resolve": resolve}],
                         chain_stage_index=parallel_stage.chain_stage_index)


def stage_start_chat(*, session: AlertSession, message: ChatUserMessage) -> Stage:
    """The chat stage answering `message`, run by the chain's chat agent."""
    config = get_config()
    chat_cfg = config.chain(session.chain_id).chat
    resolve = {"strategy_override": chat_cfg.iteration_strategy,
               "provider_override": chat_cfg.llm_provider or _chain_provider(config, session.chain_id)}
    return _stage_create(session, name="chat", kind=StageKind.CHAT, chat_message=message,
                         agents=[{"display": chat_cfg.agent, "config_name": chat_cfg.agent, "resolve": resolve}])


def _chain_provider(config: TarsyConfig, chain_id: str) -> str | None:
    return config.chain(chain_id).llm_provider


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


def stage_join(*, stage_id: int) -> Stage | None:
    """Call inside a transaction, after one of the stage's executions ended: the last one to end closes the
    stage (status by its success policy) and gets it back; None while others run or when already closed.
    A chat stage's close is the chat's answer: published as such."""
    # The executions are read once, for the join and for the `stage.completed` event's payload.
    stage = Stage.objects.select_for_update(no_key=True).prefetch_related("executions").get(id=stage_id)
    if stage.status in TERMINAL_EXEC_STATUSES:
        return None
    # Sub-agents are their orchestrator's business: the stage joins its own agents.
    executions = [e for e in stage.executions.all() if e.parent_execution_id is None]
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
    stage_status_changed.send(sender=Stage, stage=stage)
    if stage.kind == StageKind.CHAT and stage.chat_message_id is not None:
        publish("chat.message", chat_message_payload(
            session_id=stage.session_id, message_id=stage.chat_message_id, role="assistant",
            content=stage.final_analysis or stage.error_message, stage_id=stage.id, status=stage.status,
        ), session_id=stage.session_id)
    return stage


def stages_of_session(*, session_id: Any) -> list[Stage]:
    """The session's investigation and synthesis stages (not chats), in order."""
    return list(Stage.objects.filter(session_id=session_id).exclude(kind=StageKind.CHAT).order_by("index"))


def stages_all_closed(*, session_id: Any) -> bool:
    """The session has stages besides chats, and every one of them is closed."""
    stages = Stage.objects.filter(session_id=session_id).exclude(kind=StageKind.CHAT)
    return stages.exists() and not stages.exclude(status__in=TERMINAL_EXEC_STATUSES).exists()


def stages_completed_before(*, stage: Stage) -> list[Stage]:
    """Earlier completed investigation and synthesis stages, in order: what a later stage builds on."""
    return list(Stage.objects.filter(session_id=stage.session_id, index__lt=stage.index, status=ExecStatus.COMPLETED,
                                     kind__in=[StageKind.INVESTIGATION, StageKind.SYNTHESIS]).order_by("index"))


def stage_parallel_before(*, stage: Stage) -> Stage | None:
    """The investigation stage a synthesis stage follows."""
    return Stage.objects.filter(session_id=stage.session_id, index__lt=stage.index,
                                kind=StageKind.INVESTIGATION).order_by("-index").first()


def stage_running_chat_exists(*, session_id: Any) -> bool:
    return Stage.objects.filter(session_id=session_id, kind=StageKind.CHAT).exclude(
        status__in=TERMINAL_EXEC_STATUSES).exists()
