"""Orchestrators: agents with `sub_agents` dispatch other agents on demand and wait for them without a worker.

The tools `tarsy.dispatch_agent(agent, task)`, `tarsy.list_agents()` and `tarsy.cancel_agent(execution_id)`
(native functions `tarsy__dispatch_agent`, …) are answered in the worker, by `SubAgentTools`, not by the stdio
`tarsy` MCP server: they act on the calling execution (its stage, depth, guardrails and the iteration they belong
to), which a shared server process does not know. Dispatches and cancels take effect when the iteration completes,
in its transaction: an attempt that is discarded and run again dispatches nothing twice.

A sub-agent is a regular execution (its own iteration tasks, timeline and records) linked by `parent_execution`.
When the orchestrator's iteration made only these calls, or it concludes while sub-agents still run, it parks
(`waiting`, no task in flight). A sub-agent's end wakes it, once, under its row lock; its next iteration starts
with the results of the sub-agents that ended as messages (masked, evidence ids kept, so the final analysis can
cite what the sub-agents found). The sweeper times sub-agents out at their deadline, which wakes the orchestrator
too; an orchestrator that ends cancels its sub-agents.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from agents.citations import cite
from agents.config.builtins import IMPLICIT_ORCHESTRATOR
from agents.config.schema import AgentConfig, OrchestratorConfig
from agents.context import Recorder, ToolExecutor, ToolResult
from agents.llm.types import ConversationMessage, ToolCall, ToolDefinition
from agents.mcp.local_call import record_local_call
from agents.mcp.masking.boundary import mask_text
from agents.prompts.fence import untrusted
from agents.timeline_events import TimelineEventType, event_metadata
from tarsy.config import get_config
from tarsy.decisions import EndExecution, RunIteration, enact_on_commit
from tarsy.models import AgentExecution, ExecStatus, StageKind
from tarsy.services import executions, sub_agents
from tarsy.services.recorder import DbRecorder

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


class Refused(Exception):
    """A call the guardrails or the arguments refuse: the message goes back to the model as an error result."""


@dataclass
class Dispatch:
    execution_id: uuid.UUID
    agent: str
    task: str
    queued: bool


@dataclass
class IterationCalls:
    """What one iteration's calls asked for (sub-agents to dispatch or cancel, actions proposed), carried out when
    the iteration completes."""

    dispatches: list[Dispatch] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)
    orchestration_calls: int = 0
    other_calls: int = 0
    orchestrator: bool = False  # the execution may dispatch (set when its tools are built)
    # Several calls per reply (native): a reply that only dispatched is done for now. ReAct makes one call per
    # reply, so after a dispatch it goes on (it may dispatch more); it waits when a reply calls nothing.
    one_call_per_reply: bool = False
    action_agent: bool = False  # an action agent (tarsy.pipeline.actions): its proposals are in `proposals`
    proposals: list[Any] = field(default_factory=list)


def orchestrator_config(execution: AgentExecution) -> AgentConfig | None:
    """The agent config of an execution that may dispatch sub-agents, else None: an investigation stage's agent
    with `sub_agents` (or the implicit orchestrator of an `orchestrate` stage), or a chat reply (chat_orchestrator)."""
    config = get_config()
    agent = config.agents.get(execution.agent_config_name)
    stage = execution.stage
    if agent is None:
        return None
    if stage.kind == StageKind.CHAT:
        return chat_orchestrator(execution.session.chain_id, agent) if execution.parent_execution_id is None \
            else (agent if agent.sub_agents else None)
    if stage.kind != StageKind.INVESTIGATION:
        return None
    chain = config.chains.get(execution.session.chain_id)
    stage_cfg = chain.stages[stage.chain_stage_index] if chain and stage.chain_stage_index is not None \
        and stage.chain_stage_index < len(chain.stages) else None
    if stage_cfg is not None and stage_cfg.orchestrate and execution.agent_config_name == IMPLICIT_ORCHESTRATOR \
            and execution.parent_execution_id is None:
        return agent.model_copy(update={"sub_agents": [a.name for a in stage_cfg.agents],
                                        "orchestrator": stage_cfg.orchestrator or agent.orchestrator})
    return agent if agent.sub_agents else None


def chat_orchestrator(chain_id: str, chat_agent: AgentConfig) -> AgentConfig | None:
    """A chat reply dispatches what the chain's chat agent lists in `sub_agents`; a chat agent listing none
    dispatches what the session's orchestrator could (the first stage agent with `sub_agents`, or an
    `orchestrate` stage's agents), with its guardrails: a follow-up question may need the same specialists."""
    if chat_agent.sub_agents:
        return chat_agent
    config = get_config()
    chain = config.chains.get(chain_id)
    for stage_cfg in chain.stages if chain else []:
        implicit = config.agents.get(IMPLICIT_ORCHESTRATOR)
        if stage_cfg.orchestrate and implicit is not None:
            return chat_agent.model_copy(update={"sub_agents": [a.name for a in stage_cfg.agents],
                                                 "orchestrator": stage_cfg.orchestrator or implicit.orchestrator})
        for ref in stage_cfg.agents:
            agent = config.agents.get(ref.name)
            if agent is not None and agent.sub_agents:
                return chat_agent.model_copy(update={"sub_agents": agent.sub_agents,
                                                     "orchestrator": agent.orchestrator})
    return None


def may_dispatch(agent_config_name: str) -> bool:
    """Whether executions of this agent may have sub-agents (it lists some, is the implicit orchestrator, or
    answers chats, which may dispatch for the session's orchestrator)."""
    config = get_config()
    agent = config.agents.get(agent_config_name)
    return agent_config_name == IMPLICIT_ORCHESTRATOR or bool(agent and agent.sub_agents) or any(
        chain.chat.enabled and chain.chat.agent == agent_config_name for chain in config.chains.values())


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


# ---- the orchestrator's conversation ---------------------------------------------------------------------------


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


# ---- what follows an orchestrator's iteration, and a sub-agent's end -------------------------------------------


def dispatches_apply(execution_id: Any, calls: IterationCalls) -> None:
    """In the transaction completing the iteration: create the dispatched sub-agents (their first iterations are
    queued on commit). The cancels are the caller's (tarsy.pipeline.iteration ends them)."""
    if not calls.dispatches:
        return
    parent = AgentExecution.objects.select_related("stage", "session").get(id=execution_id)
    timeout = _limits(parent).timeout
    for dispatch in calls.dispatches:
        child = sub_agents.sub_agent_create(parent=parent, execution_id=dispatch.execution_id, agent=dispatch.agent,
                                            task=dispatch.task, queued=dispatch.queued, timeout_s=timeout)
        if not dispatch.queued:
            enact_on_commit([RunIteration(str(child.id), 1, child.iteration_timeout_s)])


def orchestrator_next(execution_id: Any, iteration: int, decision: RunIteration | EndExecution,
                      calls: IterationCalls) -> RunIteration | EndExecution | None:
    """After an orchestrator's iteration (its calls applied): None to park it. It parks when its reply only
    dispatched, listed or cancelled (or called nothing), or when it concluded, while sub-agents still run; it goes
    on at once when results arrived during the iteration (it must read them before concluding)."""
    unfinished = bool(sub_agents.sub_agents_unfinished(parent_id=execution_id))
    results = sub_agents.sub_agent_results_pending(parent_id=execution_id)
    concluded = isinstance(decision, EndExecution) and decision.status == ExecStatus.COMPLETED
    idle = not calls.other_calls and (not calls.orchestration_calls or not calls.one_call_per_reply)
    waits = concluded or (isinstance(decision, RunIteration) and idle)
    if not waits:
        return decision
    if results:
        timeout = decision.timeout if isinstance(decision, RunIteration) else 0.0
        return RunIteration(str(execution_id), iteration + 1, timeout)
    if unfinished:
        executions.execution_park(execution_id=execution_id)
        return None
    return decision


def wake(parent_id: Any) -> None:
    """Wake a parked orchestrator (once: under its row lock) and start queued sub-agents in the free slots."""
    parent = wake_parked(parent_id)
    parent = parent or AgentExecution.objects.filter(id=parent_id).first()
    if parent is None or parent.is_terminal:
        return
    limits = _limits(parent)
    while sub_agents.sub_agents_running_count(parent_id=parent_id) < limits.max_concurrent:
        queued = sub_agents.sub_agent_next_queued(parent_id=parent_id)
        if queued is None or not sub_agents.sub_agent_start(execution_id=queued, timeout_s=limits.timeout):
            return
        timeout = sub_agents.sub_agent_iteration_timeout(execution_id=queued)
        enact_on_commit([RunIteration(str(queued), 1, timeout)])


def wake_parked(execution_id: Any) -> AgentExecution | None:
    """Wake a parked execution, once (under its row lock): its next iteration is queued on commit. None when it was
    not parked."""
    execution = executions.execution_wake(execution_id=execution_id)
    if execution is not None:
        enact_on_commit([RunIteration(str(execution.id), execution.iterations_completed + 1,
                                      execution.iteration_timeout_s)])
    return execution


def _limits(parent: AgentExecution) -> OrchestratorConfig:
    agent = orchestrator_config(parent)
    return agent.orchestrator if agent is not None else OrchestratorConfig()


def stranded_wake() -> int:
    """Wake parked orchestrators with nothing left running: their wake commits with a sub-agent's end and cannot
    be lost, so this is only the sweeper's net against a parked orchestrator that would hang."""
    stranded = sub_agents.orchestrators_stranded()
    for parent_id in stranded:
        with transaction.atomic():
            wake(parent_id)
    return len(stranded)
