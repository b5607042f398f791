"""Controller steps on real rows: sessions through the pipeline services, the scripted LLM, Python tools.

Tools are plain Python functions behind the ToolExecutor protocol. The executor writes what the real MCP
executor writes (an `mcp_tool_call` event, an MCP interaction record, a `tool_result` event), so the
timelines asserted here have the shape users see. It is installed where the context builder gets its
executor, so `tarsy.pipeline.iteration.iteration_run` runs steps exactly as a worker does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from agents.context import MCPInteractionRecord, Recorder, ToolResult
from agents.llm.types import ToolCall, ToolDefinition
from controllers.base import StepOutcome
from tarsy.models import AgentExecution, AlertSession, LLMInteraction, Message, Stage, TimelineEvent
from tarsy.pipeline.dispatch import dispatch_pending
from tarsy.pipeline.iteration import iteration_run
from tarsy.services.sessions import session_submit
from tests.support.configdir import scripted_provider, write_config

ALERT_TYPE = "ctrl-alert"
PARALLEL_ALERT_TYPE = "ctrl-parallel"
ALERT_DATA = "pod web-1 in namespace prod is in CrashLoopBackOff"
SERVER_INSTRUCTIONS = "Kubernetes cluster: prefer namespaced queries."
CUSTOM_INSTRUCTIONS = "You investigate the web tier."
MAX_STEPS = 12  # no test here needs more iterations; a runaway loop fails instead of hanging


# ---- tools -------------------------------------------------------------------------------------------------------


@dataclass
class PyTool:
    definition: ToolDefinition
    fn: Callable[..., str]


def _pods(namespace: str) -> str:
    return f"NAME   STATUS\nweb-1  CrashLoopBackOff\nweb-2  Running\n(namespace {namespace})"


def _logs(namespace: str, pod: str) -> str:
    return f"{pod}: error: configmap \"app-config\" not found"


def _events(namespace: str) -> str:
    return "Warning  FailedMount  configmap app-config not found"


def default_tools() -> dict[str, PyTool]:
    def tool(name: str, description: str, params: list[str], fn: Callable[..., str]) -> PyTool:
        schema = {"type": "object", "properties": {p: {"type": "string"} for p in params}, "required": params}
        return PyTool(ToolDefinition(name=name, description=description, parameters=schema), fn)

    return {
        "k8s.get_pods": tool("k8s.get_pods", "List the pods of a namespace", ["namespace"], _pods),
        "k8s.get_logs": tool("k8s.get_logs", "Logs of one pod", ["namespace", "pod"], _logs),
        "k8s.get_events": tool("k8s.get_events", "Events of a namespace", ["namespace"], _events),
    }


@dataclass
class FunctionToolExecutor:
    """ToolExecutor over Python functions; records like agents.mcp.executor.MCPToolExecutor."""

    recorder: Recorder
    tools: dict[str, PyTool]
    calls: list[ToolCall] = field(default_factory=list)

    def list_tools(self) -> list[ToolDefinition]:
        return [t.definition for t in self.tools.values()]

    def execute(self, call: ToolCall) -> ToolResult:
        self.calls.append(call)
        server, _, tool = call.name.partition(".")
        arguments = call.arguments if isinstance(call.arguments, dict) else {"input": str(call.arguments)}
        event_id = self.recorder.start_event("mcp_tool_call", {"server": server, "tool": tool, "arguments": arguments})
        started = time.monotonic()
        entry = self.tools.get(call.name)
        if entry is None:
            listing = "\n".join(f"- {name}" for name in self.tools)
            content, is_error = f"Error: Unknown tool {call.name!r}. Available tools:\n{listing}", True
        else:
            try:
                content, is_error = entry.fn(**arguments), False
            except Exception as exc:  # noqa: BLE001 - a failing tool is an error result, like a failing MCP call
                content, is_error = f"Error: tool {call.name} failed: {exc}", True
        duration_ms = int((time.monotonic() - started) * 1000)
        self.recorder.complete_event(event_id, content, status="failed" if is_error else "completed",
                                     metadata={"is_error": is_error, "duration_ms": duration_ms})
        self.recorder.record_mcp_interaction(MCPInteractionRecord(
            server=server, tool=tool, arguments=arguments, result=content, raw_size=len(content),
            duration_ms=duration_ms, success=not is_error, error_message=content if is_error else "",
            available_tools=list(self.tools),
        ))
        self.recorder.add_event("tool_result", content, {"server": server, "tool": tool, "is_error": is_error,
                                                         "summarized": False, "tool_call_id": call.id})
        return ToolResult(call=call, content=content, is_error=is_error)


@pytest.fixture
def tools(monkeypatch) -> dict[str, PyTool]:
    """The tools every execution of the test sees (edit the dict to change them); installed in place of MCP."""
    registry = default_tools()

    def make_executor(*, recorder: Recorder, **_: Any) -> FunctionToolExecutor:
        return FunctionToolExecutor(recorder=recorder, tools=registry)

    monkeypatch.setattr("agents.mcp.executor.MCPToolExecutor", make_executor)
    return registry


# ---- configuration -----------------------------------------------------------------------------------------------


@pytest.fixture
def configure(tmp_path, tools):
    """Factory: activate a configuration whose agents answer from `script` (scripted provider)."""

    def make(script: Any, *, strategy: str = "react", max_iterations: int = 5, iteration_timeout: Any = 30,
             latency_ms: int = 0, chunk_size: int = 0, providers: dict[str, Any] | None = None,
             agents: dict[str, Any] | None = None, chains: dict[str, Any] | None = None,
             synthesis_strategy: str = "synthesis"):
        tarsy = {
            "defaults": {"llm_provider": "scripted", "iteration_strategy": strategy,
                         "max_iterations": max_iterations, "iteration_timeout": iteration_timeout},
            "mcp_servers": {"k8s": {"transport": {"type": "stdio", "command": "true"},
                                    "instructions": SERVER_INSTRUCTIONS}},
            "agents": {
                "SreAgent": {"mcp_servers": ["k8s"], "custom_instructions": CUSTOM_INSTRUCTIONS},
                "DbAgent": {"mcp_servers": ["k8s"]},
                "ChatAgent": {"mcp_servers": ["k8s"]},
                **(agents or {}),
            },
            "agent_chains": {
                "ctrl": {"alert_types": [ALERT_TYPE], "stages": [{"name": "investigate",
                                                                  "agents": [{"name": "SreAgent"}]}]},
                "ctrl-parallel": {
                    "alert_types": [PARALLEL_ALERT_TYPE],
                    "stages": [{"name": "parallel", "agents": [{"name": "SreAgent"}, {"name": "DbAgent"}],
                                "synthesis": {"iteration_strategy": synthesis_strategy}}],
                },
                **(chains or {}),
            },
        }
        all_providers = {"scripted": scripted_provider(script, latency_ms, chunk_size), **(providers or {})}
        return write_config(tmp_path / "config", tarsy=tarsy, providers=all_providers)

    return make


# ---- sessions and steps ------------------------------------------------------------------------------------------


def start_session(alert_type: str = ALERT_TYPE, data: str = ALERT_DATA) -> AlertSession:
    """Submit an alert and claim it the way a worker does: the first stage and its executions exist."""
    session = session_submit(data=data, alert_type=alert_type)
    assert dispatch_pending() == [str(session.id)]
    session.refresh_from_db()
    return session


def executions(session: AlertSession, stage_index: int = 0) -> list[AgentExecution]:
    stage = Stage.objects.get(session=session, index=stage_index)
    return list(stage.executions.order_by("agent_index"))


def only_execution(session: AlertSession) -> AgentExecution:
    (execution,) = executions(session)
    return execution


def run_next(execution_id: Any) -> StepOutcome:
    """Run the execution's next iteration as the worker task does (its follow-up task is never consumed here)."""
    execution = AgentExecution.objects.get(id=execution_id)
    outcome = iteration_run(execution.id, execution.iterations_completed + 1)
    assert outcome is not None, "the iteration was not claimed"
    return outcome


def run_to_end(execution_id: Any) -> list[StepOutcome]:
    outcomes = []
    for _ in range(MAX_STEPS):
        outcomes.append(run_next(execution_id))
        if outcomes[-1].is_terminal:
            return outcomes
    raise AssertionError(f"execution did not finish in {MAX_STEPS} iterations")


# ---- what users see ----------------------------------------------------------------------------------------------


def timeline(execution_id: Any) -> list[TimelineEvent]:
    """The execution's events in order; their sequence numbers must be unique and gap-free."""
    events = list(TimelineEvent.objects.filter(execution_id=execution_id).order_by("sequence_number"))
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    return events


def event_types(execution_id: Any) -> list[str]:
    return [e.event_type for e in timeline(execution_id)]


def messages(execution_id: Any) -> list[Message]:
    rows = list(Message.objects.filter(execution_id=execution_id).order_by("sequence_number"))
    assert [m.sequence_number for m in rows] == list(range(1, len(rows) + 1))
    return rows


def roles(execution_id: Any) -> list[str]:
    return [m.role for m in messages(execution_id)]


def interactions(execution_id: Any) -> list[LLMInteraction]:
    return list(LLMInteraction.objects.filter(execution_id=execution_id).order_by("iteration", "id"))


def sent_roles(interaction: LLMInteraction) -> list[str]:
    return [m["role"] for m in interaction.conversation]


def react_action(thought: str, tool: str, arguments: str) -> str:
    return f"Thought: {thought}\nAction: {tool}\nAction Input: {arguments}"
