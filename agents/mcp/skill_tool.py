"""`tarsy.load_skill(name)`: the body of a skill from the agent's catalog (agents.config.skills), on demand.

It is a tool of the built-in `tarsy` server by name, but answered in-process by the execution's tool executor
rather than by the `tarsy.mcp_server` stdio process, because:
- what an agent may load depends on the agent (its `skills`, less its `required_skills`), which the stdio server,
  one process per worker shared by every agent, cannot know;
- the catalog is already read and validated with the configuration of this process, so there is nothing to start,
  reload or keep in step;
- it works for agents that do not list the `tarsy` server in `mcp_servers`.
Each load is recorded like any tool call: an `mcp_tool_call` event naming the skill, an MCP interaction record and
a `tool_result` event. A skill is operator-written guidance, not evidence: its result carries no evidence id.
"""

from __future__ import annotations

from typing import Any

from agents.config.skills import LOAD_SKILL_TOOL, Skill
from agents.context import MCPInteractionRecord, Recorder, ToolResult
from agents.llm.types import ToolCall, ToolDefinition
from agents.timeline_events import TimelineEventType, event_metadata

from .masking.boundary import mask_arguments, mask_text

SERVER, TOOL = LOAD_SKILL_TOOL.split(".", 1)


class SkillTool:
    """The load_skill tool over one agent's loadable skills, recording through the step's recorder."""

    def __init__(self, skills: tuple[Skill, ...], recorder: Recorder) -> None:
        self._skills = {skill.name: skill for skill in skills}
        self._recorder = recorder
        self.definition = ToolDefinition(
            name=LOAD_SKILL_TOOL,
            description=("Load one of the skills listed in your instructions under 'Skills you can load': returns "
                         "the operators' procedure for that situation, to apply."),
            parameters={"type": "object", "properties": {"name": {
                "type": "string", "description": "The skill's name, as listed"}}, "required": ["name"]},
        )

    def execute(self, call: ToolCall, arguments: dict[str, Any]) -> ToolResult:
        """`arguments`: the call's, already coerced to the definition's parameters."""
        name = arguments.get("name")
        name = name.strip() if isinstance(name, str) else ""
        shown = mask_arguments({"name": name} if name else arguments)  # the model's words: masked when kept
        event_id = self._recorder.start_event(TimelineEventType.MCP_TOOL_CALL, metadata=self._metadata(
            arguments=shown))
        skill = self._skills.get(name)
        if skill is None:
            problem = f"unknown skill {mask_text(name)!r}" if name else "the skill's `name` is missing"
            content = f"Error: {problem}. Available skills: {', '.join(self._skills)}."
        else:
            content = skill.body
        failed = skill is None
        self._recorder.complete_event(event_id, content=content, status="failed" if failed else "completed",
                                      metadata=self._metadata(is_error=failed, duration_ms=0,
                                                              error_kind="unknown_skill" if failed else None))
        self._recorder.record_mcp_interaction(MCPInteractionRecord(
            server=SERVER, tool=TOOL, arguments=shown, result="" if failed else content, raw_size=len(content),
            success=not failed, error_message=content if failed else "",
            available_tools=[LOAD_SKILL_TOOL],
        ))
        self._recorder.add_event(TimelineEventType.TOOL_RESULT, content, metadata=event_metadata(
            TimelineEventType.TOOL_RESULT, server_name=SERVER, tool_name=TOOL, is_error=failed, summarized=False,
            tool_call_id=call.id))
        return ToolResult(call=call, content=content, is_error=failed, guidance=not failed)

    @staticmethod
    def _metadata(**fields: Any) -> dict[str, Any]:
        return event_metadata(TimelineEventType.MCP_TOOL_CALL, server_name=SERVER, tool_name=TOOL,
                              **{k: v for k, v in fields.items() if v is not None})
