"""The orchestrator's tools, answered in the worker: `tarsy.dispatch_agent`, `tarsy.list_agents` and
`tarsy.cancel_agent` check the call against the guardrails and collect it in the iteration's `IterationCalls`;
nothing is created until the iteration completes (tarsy.pipeline.sub_agents.decisions)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from agents.config.schema import AgentConfig
from agents.context import Recorder, ToolExecutor, ToolResult
from agents.llm.types import ToolCall, ToolDefinition
from agents.mcp.local_call import record_local_call
from agents.mcp.masking.boundary import mask_text
from tarsy.config import get_config
from tarsy.models import AgentExecution
from tarsy.services import sub_agents

from ..iteration_calls import Dispatch, IterationCalls, Refused

SERVER = "tarsy"
DISPATCH, LIST, CANCEL = "dispatch_agent", "list_agents", "cancel_agent"
_DEFINITIONS = [
    ToolDefinition(name=f"{SERVER}.{DISPATCH}", description=(
        "Start a sub-agent on a task; returns at once with its execution_id. Its result arrives later as a "
        "message, without asking. Dispatch independent tasks together, then wait."), parameters={
        "type": "object", "required": ["agent", "task"], "properties": {
            "agent": {"type": "string", "description": "Name of the agent (see list_agents)"},
            "task": {"type": "string", "description": "What to find out, with the context it needs"}}}),
    ToolDefinition(name=f"{SERVER}.{LIST}", description=(
        "The agents you can dispatch, with their descriptions, and the state of those you dispatched.")),
    ToolDefinition(name=f"{SERVER}.{CANCEL}", description="Stop a sub-agent you dispatched.", parameters={
        "type": "object", "required": ["execution_id"], "properties": {"execution_id": {"type": "string"}}}),
]


class SubAgentTools:
    """The orchestrator's tool executor: the three tools above in-process, every other call to `tools`."""

    def __init__(self, tools: ToolExecutor, *, execution: AgentExecution, agent: AgentConfig, recorder: Recorder,
                 calls: IterationCalls) -> None:
        self._tools, self._execution, self._agent, self._recorder = tools, execution, agent, recorder
        self.calls = calls

    def list_tools(self) -> list[ToolDefinition]:
        return [*self._tools.list_tools(), *_DEFINITIONS]

    def execute(self, call: ToolCall) -> ToolResult:
        tool = _own_tool(call.name)
        if tool is None:
            self.calls.other_calls += 1
            return self._tools.execute(call)
        self.calls.orchestration_calls += 1
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        try:
            content, is_error = self._answer(tool, arguments), False
        except Refused as exc:
            content, is_error = f"Error: {exc}", True
        return record_local_call(self._recorder, call, server=SERVER, tool=tool, arguments=arguments,
                                 content=content, is_error=is_error, available=[d.name for d in _DEFINITIONS])

    def _answer(self, tool: str, arguments: dict[str, Any]) -> str:
        if tool == DISPATCH:
            return json.dumps(self._dispatch(str(arguments.get("agent") or ""), str(arguments.get("task") or "")))
        if tool == CANCEL:
            return json.dumps(self._cancel(str(arguments.get("execution_id") or "")))
        return json.dumps(self._list())

    def _dispatch(self, agent: str, task: str) -> dict[str, Any]:
        limits = self._agent.orchestrator
        if agent not in self._agent.sub_agents:
            raise Refused(f"unknown agent {agent!r}; you can dispatch: {', '.join(self._agent.sub_agents)}")
        if not task.strip():
            raise Refused("a task is required: say what the sub-agent should find out")
        if self._execution.depth + 1 > limits.max_depth:
            raise Refused(f"sub-agents may not be dispatched this deep (max_depth {limits.max_depth}); "
                          "investigate with your own tools")
        existing = sub_agents.sub_agents_of(parent_id=self._execution.id)
        if len(existing) + len(self.calls.dispatches) >= limits.max_total:
            raise Refused(f"the limit of {limits.max_total} sub-agents for this investigation is reached")
        running = sub_agents.sub_agents_running_count(parent_id=self._execution.id) + sum(
            not d.queued for d in self.calls.dispatches)
        queued = running >= limits.max_concurrent
        if queued and limits.on_limit == "refuse":
            raise Refused(f"{limits.max_concurrent} sub-agents are already running (max_concurrent); wait for a "
                          "result or cancel one")
        dispatch = Dispatch(execution_id=uuid.uuid4(), agent=agent, task=mask_text(task.strip()), queued=queued)
        self.calls.dispatches.append(dispatch)
        return {"execution_id": str(dispatch.execution_id), "agent": agent,
                "status": "queued" if queued else "accepted"}

    def _cancel(self, execution_id: str) -> dict[str, Any]:
        known = {s.execution_id for s in sub_agents.sub_agents_of(parent_id=self._execution.id)}
        if execution_id not in known:
            raise Refused(f"no sub-agent of yours has the execution_id {execution_id!r}")
        self.calls.cancels.append(execution_id)
        return {"execution_id": execution_id, "status": "cancelling"}

    def _list(self) -> dict[str, Any]:
        config = get_config()
        catalog = [{"agent": name, "description": config.agents[name].description} for name in self._agent.sub_agents]
        states = [{"execution_id": s.execution_id, "agent": s.agent, "status": s.status, "task": s.task}
                  for s in sub_agents.sub_agents_of(parent_id=self._execution.id)]
        states += [{"execution_id": str(d.execution_id), "agent": d.agent, "status": "accepted", "task": d.task}
                   for d in self.calls.dispatches]
        return {"agents": catalog, "dispatched": states}


def _own_tool(name: str) -> str | None:
    """`tarsy.dispatch_agent`, or the bare `dispatch_agent` a model may answer with."""
    server, _, tool = name.rpartition(".")
    return tool if server in ("", SERVER) and tool in (DISPATCH, LIST, CANCEL) else None
