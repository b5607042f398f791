"""Build the ExecutionContext a controller step receives, entirely from database state.

Any worker process can run any step: nothing here depends on memory of an
earlier step except per-process caches (providers, MCP sessions, runbooks).
The rows are read through tarsy.services. The step writes through its
recorder (tarsy.services.recorder) and asks its liveness (heartbeat, stop
check) at every boundary.
"""

from __future__ import annotations

import os
import time
from typing import Any

from agents.context import ChatContext, ExecutionContext, IterationState, ResolvedAgentConfig, resolve_agent
from agents.llm.registry import LLMTarget, backend_for
from agents.llm.types import ConversationMessage, ToolCall, ToolDefinition
from agents.prompts.stage_context import (
    AgentInvestigation,
    format_investigation_for_chat,
    format_parallel_investigations,
    format_related_alerts,
    format_stage_analysis,
)
from agents.runbooks import fetch_runbook
from agents.timeline_events import TimelineEventType, event_metadata
from tarsy.config import get_config
from tarsy.models import AgentExecution, AlertSession, Stage, StageKind
from tarsy.services import chats, executions, occurrences, stages, timeline
from tarsy.services.recorder import DbRecorder, Liveness

from .budget import BudgetedTools, iteration_budget


class NoTools:
    """Tool executor of tool-less strategies (synthesis)."""

    def list_tools(self) -> list[ToolDefinition]:
        return []

    def execute(self, call: ToolCall):  # pragma: no cover - controllers never call it without tools
        raise RuntimeError("this agent has no tools")


def resolve_for_execution(execution: AgentExecution) -> ResolvedAgentConfig:
    stage = execution.stage
    session = execution.session
    kwargs: dict[str, Any] = {"strategy_override": execution.iteration_strategy,
                              "provider_override": execution.llm_provider or None}
    if stage.kind == StageKind.INVESTIGATION:
        kwargs.update(chain_id=session.chain_id, stage_index=stage.chain_stage_index,
                      stage_agent_index=0 if stage.parallel_type == "replica" else execution.agent_index)
    return resolve_agent(get_config(), agent_name=execution.agent_config_name, mcp_selection=session.mcp_selection,
                         **kwargs)


def session_deadline(session: AlertSession) -> float | None:
    if not session.started_at:
        return None
    return session.started_at.timestamp() + get_config().defaults.session_timeout


def _investigation(execution: AgentExecution) -> AgentInvestigation:
    return AgentInvestigation(
        name=execution.agent_name, status=execution.status, provider=execution.llm_provider,
        strategy=execution.iteration_strategy, events=timeline.timeline_investigation_events(execution_id=execution.id),
        final_analysis=execution.final_analysis, error=execution.error_message,
    )


def previous_stage_context(stage: Stage) -> str:
    """Analyses of the earlier completed stages the next stage builds on (synthesis replaces its parallel stage)."""
    parts = [format_stage_analysis(s.name, s.final_analysis) for s in stages.stages_completed_before(stage=stage)
             if s.final_analysis and not (s.kind == StageKind.INVESTIGATION and s.parallel_type)]
    return "\n\n".join(parts)


def parallel_results(stage: Stage) -> str:
    parallel = stages.stage_parallel_before(stage=stage)
    if parallel is None:
        return ""
    return format_parallel_investigations(parallel.name, [_investigation(e) for e in parallel.executions.all()])


def chat_context(stage: Stage) -> ChatContext:
    investigation = format_investigation_for_chat(
        [(s.name, [_investigation(e) for e in s.executions.all()])
         for s in stages.stages_of_session(session_id=stage.session_id)]
    )
    message = stage.chat_message
    history = chats.chat_history(session_id=stage.session_id, before_message_id=message.id if message else None)
    return ChatContext(investigation=investigation, history=history, question=message.content if message else "")


def build_execution_context(execution: AgentExecution, iteration: int, recorder: DbRecorder, *,
                            stop_checked: bool = False) -> ExecutionContext:
    """`stop_checked`: the caller has just seen the session running (the claim), so the step's first stop
    check can wait an interval."""
    from agents.mcp.executor import MCPToolExecutor
    from agents.mcp.summarizer import ResultSummarizer

    config = get_config()
    stage, session = execution.stage, execution.session
    resolved = resolve_for_execution(execution)
    s_deadline = session_deadline(session) if stage.kind != StageKind.CHAT else None
    liveness = Liveness(session_id=session.id, execution_id=execution.id, session_deadline=s_deadline,
                        stop_checked=stop_checked)
    deadline = time.time() + resolved.iteration_timeout
    if s_deadline:
        deadline = min(deadline, s_deadline)
    target = LLMTarget.of(resolved.llm_provider_name, resolved.llm_provider)
    fallbacks = tuple(LLMTarget.of(name, provider) for name, provider in resolved.fallback_providers)
    # The runbook and earlier stages only go into the first prompt; later steps continue the stored conversation.
    first_prompt = not recorder.conversation()
    runbook = _runbook(session, config, recorder, first_iteration=iteration == 1) if first_prompt else ""
    related = _related_alerts(execution, recorder, first_prompt)
    tools: Any = NoTools()
    if resolved.mcp_servers:
        summarizer = ResultSummarizer(
            target=target, fallbacks=fallbacks, recorder=recorder,
            investigation_so_far=lambda: "\n\n".join(m.content for m in recorder.conversation()[1:] if m.content),
            agent_name=execution.agent_name, execution_id=str(execution.id), iteration=iteration, deadline=deadline,
        )
        tools = MCPToolExecutor(config=config, resolved=resolved, recorder=recorder, summarizer=summarizer,
                                deadline=deadline)
    budget = iteration_budget(execution)
    if budget.tool_calls_left is not None and resolved.mcp_servers:
        tools = BudgetedTools(tools, left=budget.tool_calls_left, recorder=recorder)
    return ExecutionContext(
        session_id=str(session.id), execution_id=str(execution.id), agent_name=execution.agent_name,
        stage_name=stage.name, config=resolved,
        state=IterationState(iteration=iteration, max_iterations=execution.max_iterations,
                             consecutive_timeouts=execution.consecutive_timeouts,
                             last_interaction_failed=execution.last_interaction_failed,
                             budget_reached=budget.reached),
        alert_type=session.alert_type, alert_data=session.alert_data + related, runbook=runbook,
        previous_stage_context=previous_stage_context(stage)
        if first_prompt and stage.kind == StageKind.INVESTIGATION else "",
        llm=target.adapter, tools=tools, recorder=recorder, liveness=liveness, deadline=deadline, fallbacks=fallbacks,
        provider_switched=lambda to, other_family: executions.execution_provider_switch(
            execution_id=execution.id, provider=to.name, backend=backend_for(to.config),
            drop_provider_state=other_family),
        fallback_provider=resolved.llm_provider_name
        if resolved.llm_provider_name != resolved.configured_provider_name else None,
        chat=chat_context(stage) if stage.kind == StageKind.CHAT else None,
        parallel_results=parallel_results(stage) if first_prompt and stage.kind == StageKind.SYNTHESIS else "",
    )


def _related_alerts(execution: AgentExecution, recorder: DbRecorder, first_prompt: bool) -> str:
    """Alerts of the session's group that arrived since this execution last looked (a chat answers about the
    investigation, not the storm). The first prompt carries them after the alert; later they join the
    conversation as a message of their own before the step's LLM call. Either way a timeline event says so,
    and its metadata is the record of what this execution has seen: a discarded attempt forgets it too.
    `execution` comes from the claim (services.executions.execution_lock_for_iteration), which says whether the
    session has related alerts at all."""
    if execution.stage.kind == StageKind.CHAT or execution.latest_related_alert is None:
        return ""
    fresh = occurrences.related_after(session_id=execution.session_id,
                                      delivered=timeline.related_alerts_seen(execution_id=execution.id))
    if not fresh:
        return ""
    text = format_related_alerts([(row.alert_type, row.received_at.isoformat(), row.alert_data) for row in fresh])
    ids = [row.id for row in fresh]
    recorder.add_event(TimelineEventType.RELATED_ALERTS, text,
                       event_metadata(TimelineEventType.RELATED_ALERTS, occurrence_ids=ids, count=len(ids)))
    if first_prompt:
        return "\n\n" + text
    recorder.add_messages([ConversationMessage(role="user", content=text)])
    return ""


def _runbook(session: AlertSession, config: Any, recorder: DbRecorder, first_iteration: bool) -> str:
    default = config.defaults.runbook
    if not session.runbook_url:
        return default
    result = fetch_runbook(session.runbook_url, allowed_domains=config.system.runbooks.allowed_domains,
                           default=default, github_token=os.environ.get("GITHUB_TOKEN"))
    if result.warning and first_iteration:
        recorder.add_event("error", f"Runbook not used: {result.warning}", {"runbook_url": session.runbook_url,
                                                                             "warning": True})
    return result.content
