"""What an orchestrator reads of its sub-agents: the results of those that ended, as messages of its next
iteration (keyed by iteration, so a re-run of it reads them again)."""

from __future__ import annotations

from agents.citations import cite
from agents.llm.types import ConversationMessage
from agents.mcp.masking.boundary import mask_text
from agents.prompts.fence import untrusted
from agents.timeline_events import TimelineEventType, event_metadata
from tarsy.models import AgentExecution, ExecStatus
from tarsy.services import sub_agents
from tarsy.services.recorder import DbRecorder

from .tools import DISPATCH, SERVER


def results_inject(execution: AgentExecution, iteration: int, recorder: DbRecorder) -> None:
    """Give the iteration the results of the sub-agents that ended since the last one, as user messages (shown on
    its timeline as the late results of its dispatch_agent calls, flagged like tool output when they read like
    instructions)."""
    for child in sub_agents.sub_agent_results_take(parent_id=execution.id, iteration=iteration):
        content, flagged = result_message(child)
        recorder.add_messages([ConversationMessage(role="user", content=content)])
        recorder.add_event(TimelineEventType.TOOL_RESULT, content, metadata=event_metadata(
            TimelineEventType.TOOL_RESULT, server_name=SERVER, tool_name=DISPATCH,
            is_error=child.status != ExecStatus.COMPLETED, suspected_injection=flagged or None))


def result_message(child: AgentExecution) -> tuple[str, bool]:
    """A sub-agent's outcome as its orchestrator reads it: status, then its analysis or error fenced as data (a
    sub-agent read outside text: its answer may carry it), then the evidence ids its tool results carry (the same
    ids: citing them in the final analysis cites the sub-agent's evidence); and whether the answer was flagged."""
    head = f"Result of sub-agent {child.agent_config_name} (execution_id {child.id}): {child.status}."
    if child.status == ExecStatus.COMPLETED:
        answer = untrusted(mask_text(child.final_analysis) or "(no analysis)", what="its final analysis",
                           preface=head)
    else:
        answer = untrusted(mask_text(child.error_message) or child.status, what="why it did not finish",
                           preface=head)
    lines = [answer.text]
    evidence = sub_agents.sub_agent_evidence(execution_id=child.id)
    if evidence:
        lines.append("Its tool results, citable in your analysis: " + "; ".join(
            f"evidence {cite(identifier)} ({tool})" for identifier, tool in evidence))
    return "\n\n".join(lines), answer.flagged
