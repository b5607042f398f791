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
from agents.context import Recorder, ToolResult
from agents.llm.types import ToolCall, ToolDefinition

from .local_call import record_local_call
from .masking.boundary import mask_text

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
        skill = self._skills.get(name)
        if skill is None:
            problem = f"unknown skill {mask_text(name)!r}" if name else "the skill's `name` is missing"
            content = f"Error: {problem}. Available skills: {', '.join(self._skills)}."
        else:
            content = skill.body
        failed = skill is None
        return record_local_call(self._recorder, call, server=SERVER, tool=TOOL,
                                 arguments={"name": name} if name else arguments, content=content, is_error=failed,
                                 available=[LOAD_SKILL_TOOL], error_kind="unknown_skill" if failed else None,
                                 guidance=not failed)
