"""Formatting finished stages as text for the LLM: the next sequential stage, a synthesis, or a chat.

Analysis text is wrapped in `<!-- Analysis Result START/END -->` boundaries so the reader can tell one result
from the surrounding prompt even when the analysis itself is markdown with headings; any occurrence of those
markers inside the content is escaped, so content cannot close its own boundary early.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agents.citations import cite
from agents.prompts.fence import SUSPECTED_INJECTION, untrusted
from agents.timeline_events import (
    LLMToolCallMetadata,
    MCPToolCallMetadata,
    ToolResultMetadata,
    ToolSummaryMetadata,
    read_metadata,
)

RESULT_START = "<!-- Analysis Result START -->"
RESULT_END = "<!-- Analysis Result END -->"
_MARKER = re.compile(r"<!--(\s*Analysis\s+Result\s+(?:START|END)\s*)-->", re.IGNORECASE)

# How each timeline event type is labelled in an investigation history. Tool events are rendered separately.
_LABELS: dict[str, str] = {
    "llm_thinking": "Thinking",
    "llm_response": "Response",
    "final_analysis": "Final analysis",
    "error": "Error",
    "code_execution": "Code execution",
    "google_search_result": "Google search",
    "url_context_result": "URL context",
    "user_question": "Question",
    "related_alerts": "Related alerts",
}


@dataclass
class AgentInvestigation:
    """One agent's finished execution as the formatters need it: identity, outcome and its timeline in order."""

    name: str
    status: str
    provider: str = ""
    strategy: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)  # {"event_type", "content", "metadata"}
    final_analysis: str = ""
    error: str = ""


def escape_markers(content: str) -> str:
    """Neutralise analysis boundary markers inside content (`<!--` → `&lt;!--`, `-->` → `--&gt;`)."""
    return _MARKER.sub(lambda match: f"&lt;!--{match.group(1)}--&gt;", content)


def _wrapped(content: str) -> str:
    return f"{RESULT_START}\n{escape_markers(content.strip())}\n{RESULT_END}"


def format_stage_analysis(stage_name: str, final_analysis: str) -> str:
    """A finished sequential stage for the next stage: its final analysis inside result boundaries."""
    return f"### Results from '{stage_name}' stage:\n\n{_wrapped(final_analysis)}"


def format_parallel_investigations(stage_name: str, investigations: list[AgentInvestigation]) -> str:
    """A parallel stage for its synthesis: every agent's identity, status and full investigation history."""
    lines = [f"### Results from parallel stage '{stage_name}' ({len(investigations)} agents):"]
    for index, investigation in enumerate(investigations, start=1):
        lines.append(_agent_section(index, investigation, heading="####"))
    return "\n\n".join(lines)


def format_related_alerts(alerts: list[tuple[str, str, str]]) -> tuple[str, bool]:
    """Alerts of the same group that arrived during the investigation, (alert type, received at, data) each:
    the model weighs them as more evidence of the one incident it is investigating. Each alert's data is fenced
    and checked like the alert's own; the flag says whether any reads like instructions."""
    lines = [f"## Related alerts ({len(alerts)})",
             "These alerts share this alert's group (same labels) and arrived while it was being investigated. "
             "They are part of the same incident: take them into account."]
    flagged = False
    for number, (alert_type, received_at, data) in enumerate(alerts, start=1):
        block = untrusted(data or "(no alert data)", what="its data exactly as received",
                          preface=f"Related alert {number}: {alert_type}, received {received_at}.")
        lines.append(block.text)
        flagged = flagged or block.flagged
    return "\n\n".join(lines), flagged


def format_investigation_for_chat(stages: list[tuple[str, list[AgentInvestigation]]]) -> str:
    """A whole session's investigation for a follow-up chat, stage by stage, agent by agent."""
    parts = []
    for number, (stage_name, investigations) in enumerate(stages, start=1):
        parts.append(f"## Stage {number}: {stage_name}")
        for index, investigation in enumerate(investigations, start=1):
            parts.append(_agent_section(index, investigation, heading="###"))
    return "\n\n".join(parts)


def _agent_section(index: int, investigation: AgentInvestigation, *, heading: str) -> str:
    facts = [f"**Status**: {investigation.status}"]
    if investigation.provider:
        facts.append(f"**LLM provider**: {investigation.provider}")
    if investigation.strategy:
        facts.append(f"**Iteration strategy**: {investigation.strategy}")
    head = f"{heading} Agent {index}: {investigation.name}\n" + "\n".join(facts)
    return f"{head}\n\n{_wrapped(format_history(investigation))}"


def format_history(investigation: AgentInvestigation) -> str:
    """The agent's timeline as labelled blocks; the final analysis and error are added when no event carries them.

    A tool call shows once (the LLM's request and its MCP execution are one call) and its result once, from the
    tool_result event: a tool call event's own content is the arguments or a display copy of the result."""
    blocks: list[str] = []
    previous_call: tuple[str, str] | None = None
    for event in investigation.events:
        event_type = event.get("event_type", "")
        content = (event.get("content") or "").strip()
        metadata = read_metadata(event_type, event.get("metadata"))
        if isinstance(metadata, LLMToolCallMetadata | MCPToolCallMetadata):
            call = (metadata.qualified_name, _arguments(metadata.arguments))
            if call != previous_call:
                blocks.append(f"**Tool call**: {call[0]} {call[1]}".rstrip())
            previous_call = call
            continue
        previous_call = None
        if isinstance(metadata, ToolResultMetadata | ToolSummaryMetadata):
            blocks.append(_tool_result_block(metadata, content))
        elif content:
            label = _LABELS.get(event_type, event_type.replace("_", " ").capitalize() or "Event")
            blocks.append(f"**{label}**:\n{content}")
    types = {event.get("event_type") for event in investigation.events}
    if investigation.final_analysis.strip() and "final_analysis" not in types:
        blocks.append(f"**Final analysis**:\n{investigation.final_analysis.strip()}")
    if investigation.error.strip() and "error" not in types:
        blocks.append(f"**Error**:\n{investigation.error.strip()}")
    return "\n\n".join(blocks) if blocks else "(no investigation recorded)"


def _tool_result_block(metadata: ToolResultMetadata | ToolSummaryMetadata, content: str) -> str:
    """tool_result: what the LLM was given back, under its evidence id; mcp_tool_summary: the summary of a large
    result."""
    result = metadata if isinstance(metadata, ToolResultMetadata) else None
    label = "Tool error" if result and result.is_error else "Tool result"
    if result is None or result.summarized:
        label += ", summarized"
    name = metadata.qualified_name
    evidence = f", evidence {cite(result.evidence_id)}" if result and result.evidence_id else ""
    warning = f" ({SUSPECTED_INJECTION})" if result and result.suspected_injection else ""
    return f"**{label}**" + (f" ({name})" if name else "") + f"{evidence}{warning}:\n{content}"


def _arguments(arguments: Any) -> str:
    if arguments in (None, "", {}):
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
