"""Build the ExecutionContext a controller step receives, entirely from database state.

Any worker process can run any step. The context is put together from parts with one job each, read as often
as they can change:

- once per execution (and process): the agent setup (agent_setup: merged config, LLM providers) and a chat's
  context (chat_context), built only from data fixed while the execution runs;
- once, for the first prompt only: the runbook, earlier stages, a parallel stage's results (first_prompt);
- fresh at every iteration: the budget (budget), alerts that arrived since the last step (related_alerts),
  the conversation (the recorder), the deadlines, and the tools bound to them.

The step writes through its recorder (tarsy.services.recorder) and asks its liveness (heartbeat, stop check) at
every boundary.
"""

from __future__ import annotations

import time
from typing import Any

from django.utils import timezone

from agents.config.schema import AgentConfig
from agents.context import ExecutionContext, IterationState
from agents.llm.registry import backend_for
from agents.llm.types import ToolCall, ToolDefinition
from tarsy.config import get_config
from tarsy.models import AgentExecution, StageKind
from tarsy.services import actions, executions
from tarsy.services.recorder import DbRecorder, Liveness

from .actions.run import decisions_inject
from .actions.tools import ActionTools
from .agent_setup import AgentSetup, agent_setup
from .budget import BudgetedTools, IterationBudget, iteration_budget
from .chat_context import chat_context_for
from .first_prompt import FirstPrompt, first_prompt
from .iteration_calls import IterationCalls
from .related_alerts import related_alerts
from .sub_agents.orchestrators import orchestrator_config
from .sub_agents.results import results_inject
from .sub_agents.tools import SubAgentTools


class NoTools:
    """Tool executor of tool-less strategies (synthesis)."""

    def list_tools(self) -> list[ToolDefinition]:
        return []

    def execute(self, call: ToolCall):  # pragma: no cover - controllers never call it without tools
        raise RuntimeError("this agent has no tools")


def session_deadline(execution: AgentExecution) -> float | None:
    """Epoch seconds when the execution's session times out: its session_timeout counts from its start, the time a
    proposal waited for a person left out (tarsy.services.actions.actions_wait_s). `execution` comes from the claim
    (tarsy.services.executions.execution_lock_for_iteration), which says whether the session has proposals."""
    session = execution.session
    if not session.started_at:
        return None
    waited = actions.actions_wait_s(session_id=session.id, now=timezone.now()) if execution.session_has_actions else 0
    return session.started_at.timestamp() + get_config().defaults.session_timeout + waited


def build_execution_context(execution: AgentExecution, iteration: int, recorder: DbRecorder, *,
                            stop_checked: bool = False, calls: IterationCalls | None = None) -> ExecutionContext:
    """`stop_checked`: the caller has just seen the session running (the claim), so the step's first stop
    check can wait an interval. `calls`: collects an orchestrator's sub-agent calls (tarsy.pipeline.sub_agents)."""
    stage, session = execution.stage, execution.session
    setup = agent_setup(execution)
    s_deadline = session_deadline(execution) if stage.kind != StageKind.CHAT else None
    liveness = Liveness(session_id=session.id, execution_id=execution.id, session_deadline=s_deadline,
                        stop_checked=stop_checked, attempt=execution.attempt)
    deadline = time.time() + setup.resolved.iteration_timeout
    if s_deadline:
        deadline = min(deadline, s_deadline)
    if execution.deadline_at:  # a sub-agent's own time limit
        deadline = min(deadline, execution.deadline_at.timestamp())
    is_first_prompt = not recorder.conversation()
    budget = iteration_budget(execution)
    orchestrator = orchestrator_config(execution)
    if orchestrator is not None and not is_first_prompt:
        results_inject(execution, iteration, recorder)
    tools = _tools(execution, iteration, setup, recorder, budget, deadline)
    if setup.resolved.is_action and not is_first_prompt:
        decisions_inject(execution, iteration, recorder, setup.resolved, deadline)
    prompt = first_prompt(execution, recorder, iteration) if is_first_prompt else FirstPrompt()
    related = related_alerts(execution, recorder, is_first_prompt)
    return ExecutionContext(
        session_id=str(session.id), execution_id=str(execution.id), agent_name=execution.agent_name,
        stage_name=stage.name, config=setup.resolved,
        state=IterationState(iteration=iteration, max_iterations=execution.max_iterations,
                             consecutive_timeouts=execution.consecutive_timeouts,
                             last_interaction_failed=execution.last_interaction_failed,
                             budget_reached=budget.reached),
        alert_type=session.alert_type, alert_data=session.alert_data + related, runbook=prompt.runbook,
        previous_stage_context=prompt.previous_stage_context, parallel_results=prompt.parallel_results,
        memories=prompt.memories, task=execution.task,
        llm=setup.target.adapter,
        tools=_orchestrating(_acting(tools, execution, setup, recorder, calls, deadline), execution, orchestrator,
                             recorder, calls),
        recorder=recorder, liveness=liveness, deadline=deadline, fallbacks=setup.fallbacks,
        provider_switched=lambda to, other_family: executions.execution_provider_switch(
            execution_id=execution.id, provider=to.name, backend=backend_for(to.config),
            drop_provider_state=other_family),
        fallback_provider=setup.fallback_provider,
        # A chat's sub-agent works on its task, not on the question (its orchestrator, the reply, answers it).
        chat=chat_context_for(execution) if stage.kind == StageKind.CHAT and execution.parent_execution_id is None
        else None,
    )


def _orchestrating(tools: Any, execution: AgentExecution, agent: AgentConfig | None, recorder: DbRecorder,
                   calls: IterationCalls | None) -> Any:
    """An orchestrator's tools add dispatch_agent, list_agents and cancel_agent (tarsy.pipeline.sub_agents)."""
    if agent is None:
        return tools
    calls = calls if calls is not None else IterationCalls()
    calls.orchestrator = True
    calls.one_call_per_reply = execution.iteration_strategy == "react"
    return SubAgentTools(tools, execution=execution, agent=agent, recorder=recorder, calls=calls)


def _acting(tools: Any, execution: AgentExecution, setup: AgentSetup, recorder: DbRecorder,
            calls: IterationCalls | None, deadline: float) -> Any:
    """An action agent's action tools are proposed, never run, but dry-run where they can (tarsy.pipeline.actions)."""
    from agents.mcp.executor import MCPToolExecutor

    if not setup.resolved.is_action or isinstance(tools, NoTools):
        return tools
    calls = calls if calls is not None else IterationCalls()
    calls.action_agent = True
    dry_runs = MCPToolExecutor(config=get_config(), resolved=setup.resolved, recorder=recorder, deadline=deadline,
                               actions=True)
    return ActionTools(tools, execution=execution, recorder=recorder, calls=calls, dry_runs=dry_runs)


def _tools(execution: AgentExecution, iteration: int, setup: AgentSetup, recorder: DbRecorder,
           budget: IterationBudget, deadline: float) -> Any:
    """The iteration's tool executor: the agent's MCP servers (and tarsy.load_skill when it has skills to load)
    behind this step's recorder and deadline, and the tool-call budget's limit when there is one."""
    from agents.mcp.executor import MCPToolExecutor
    from agents.mcp.summarizer import ResultSummarizer

    resolved = setup.resolved
    if not resolved.mcp_servers and not resolved.loadable_skills:
        return NoTools()
    summarizer = ResultSummarizer(
        target=setup.target, fallbacks=setup.fallbacks, recorder=recorder,
        investigation_so_far=lambda: "\n\n".join(m.content for m in recorder.conversation()[1:] if m.content),
        agent_name=execution.agent_name, execution_id=str(execution.id), session_id=str(execution.session_id),
        iteration=iteration, deadline=deadline,
    )
    tools: Any = MCPToolExecutor(config=get_config(), resolved=resolved, recorder=recorder, summarizer=summarizer,
                                 deadline=deadline, actions=resolved.is_action)
    if budget.tool_calls_left is not None:
        tools = BudgetedTools(tools, left=budget.tool_calls_left, recorder=recorder)
    return tools
