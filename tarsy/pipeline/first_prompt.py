"""What only an execution's first prompt carries: the runbook, the earlier stages' analyses, recalled memories
(investigation and chat), and for a synthesis the investigations of its parallel stage.

Later iterations continue the stored conversation, so these are built when the conversation is empty: once per
execution (again only when an interrupted first iteration runs anew).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from agents.prompts.stage_context import AgentInvestigation, format_parallel_investigations, format_stage_analysis
from agents.runbooks import fetch_runbook
from tarsy.config import get_config
from tarsy.models import AgentExecution, AlertSession, Stage, StageKind
from tarsy.services import stages, timeline
from tarsy.services.recorder import DbRecorder

from .memory.recall import recalled_for_prompt


@dataclass(frozen=True)
class FirstPrompt:
    runbook: str = ""
    previous_stage_context: str = ""  # investigation stages
    parallel_results: str = ""  # synthesis stages
    memories: str = ""  # investigation and chat stages, when memory is on (tarsy.pipeline.memory.recall)


def first_prompt(execution: AgentExecution, recorder: DbRecorder, iteration: int) -> FirstPrompt:
    stage = execution.stage
    return FirstPrompt(
        runbook=_runbook(execution.session, recorder, first_iteration=iteration == 1),
        previous_stage_context=previous_stage_context(stage) if stage.kind == StageKind.INVESTIGATION else "",
        parallel_results=parallel_results(stage) if stage.kind == StageKind.SYNTHESIS else "",
        memories=recalled_for_prompt(execution, recorder, question=_chat_question(stage)),
    )


def _chat_question(stage: Stage) -> str:
    message = stage.chat_message if stage.kind == StageKind.CHAT else None
    return message.content if message else ""


def investigation(execution: AgentExecution) -> AgentInvestigation:
    """What an execution found, as a later stage or a chat reads it."""
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
    return format_parallel_investigations(parallel.name, [investigation(e) for e in parallel.executions.all()])


def _runbook(session: AlertSession, recorder: DbRecorder, first_iteration: bool) -> str:
    """The session's runbook (fetched through a per-process cache), else the configured default. A runbook that
    cannot be used is said once, on the first iteration's timeline."""
    config: Any = get_config()
    default = config.defaults.runbook
    if not session.runbook_url:
        return default
    result = fetch_runbook(session.runbook_url, allowed_domains=config.system.runbooks.allowed_domains,
                           default=default, github_token=os.environ.get("GITHUB_TOKEN"))
    if result.warning and first_iteration:
        recorder.add_event("error", f"Runbook not used: {result.warning}", {"runbook_url": session.runbook_url,
                                                                             "warning": True})
    return result.content
