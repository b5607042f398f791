"""Budgets: has an investigation used up one of its limits, and so must its agents conclude now?

Checked when an investigation iteration starts, from what the session has used so far (tokens and cost
totals, MCP tool calls, time since it started). A reached budget takes the max-iterations path: the agent
gets the forced-conclusion call without tools, and no later chain stage starts (see `stages.next_after_stage`).
The first agent to see it records the marker and the timeline event (through tarsy.services.spend).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.utils import timezone

from agents.config.schema import BudgetConfig
from agents.context import Recorder, ToolExecutor, ToolResult
from agents.llm.types import ToolCall, ToolDefinition
from agents.timeline_events import TimelineEventType, event_metadata
from tarsy.config import get_config
from tarsy.models import AgentExecution, AlertSession, SessionStatus, StageKind
from tarsy.services import spend

from .sub_agents.orchestrators import orchestrator_config

_LABELS = {"tokens": "tokens", "cost_usd": "estimated cost (USD)", "tool_calls": "tool calls",
           "wall_time": "wall time (s)"}


@dataclass(frozen=True)
class BudgetHit:
    kind: str  # tokens / cost_usd / tool_calls / wall_time
    limit: float
    used: float

    @property
    def message(self) -> str:
        return (f"Budget reached: {_LABELS[self.kind]} {_figure(self.used)} of {_figure(self.limit)}; "
                "concluding with the findings so far")

    def marker(self) -> dict[str, Any]:
        return {"kind": self.kind, "limit": self.limit, "used": self.used, "message": self.message}


def usd(value: Decimal) -> str:
    """Dollars as people read them: cents, or four places below a dollar so small spends do not show as $0.00."""
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def _figure(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def budget_hit(budget: BudgetConfig, *, tokens: int, cost_usd: Decimal, tool_calls: int,
               wall_time_s: float) -> BudgetHit | None:
    """The first limit of `budget` that the usage has reached, in the order of the config keys."""
    used = {"tokens": tokens, "cost_usd": cost_usd, "tool_calls": tool_calls, "wall_time": wall_time_s}
    for kind, limit in budget.model_dump(exclude_none=True).items():
        if used[kind] >= limit:
            return BudgetHit(kind=kind, limit=float(limit), used=round(float(used[kind]), 6))
    return None


@dataclass(frozen=True)
class IterationBudget:
    """What the budget allows the iteration about to run."""

    reached: str | None = None  # why it must be the forced conclusion (the budget's message)
    tool_calls_left: int | None = None  # None: no tool-call limit


def _usage_hit(session: AlertSession, budget: BudgetConfig, tool_calls: int) -> BudgetHit | None:
    started = session.started_at or timezone.now()
    counters = session.counters  # read with the claim (services.executions.execution_lock_for_iteration)
    return budget_hit(budget, tokens=counters.total_tokens, cost_usd=counters.cost_usd, tool_calls=tool_calls,
                      wall_time_s=(timezone.now() - started).total_seconds())


def iteration_budget(execution: AgentExecution) -> IterationBudget:
    """The budget for the iteration about to run, from what its session has used. Investigation stages only:
    a synthesis is one call over the findings, a chat answers a question. The first agent to find the budget
    reached records the marker and the timeline event."""
    if execution.stage.kind != StageKind.INVESTIGATION:
        return IterationBudget()
    session = execution.session
    if session.budget_reached:
        return IterationBudget(reached=session.budget_reached.get("message") or "Budget reached")
    budget = get_config().budget(session.chain_id)
    if not budget.model_dump(exclude_none=True):
        return IterationBudget()
    tool_calls = spend.session_tool_calls(session_id=session.id) if budget.tool_calls else 0
    hit = _usage_hit(session, budget, tool_calls)
    if hit is not None:
        spend.session_budget_mark(session_id=session.id, marker=hit.marker(), message=hit.message)
        return IterationBudget(reached=hit.message)
    share_reached = _sub_agent_share_reached(execution, budget)
    if share_reached:
        return IterationBudget(reached=share_reached)
    return IterationBudget(tool_calls_left=budget.tool_calls - tool_calls if budget.tool_calls else None)


def _sub_agent_share_reached(execution: AgentExecution, budget: BudgetConfig) -> str | None:
    """A sub-agent may spend its orchestrator's `budget_share` of the session's token and cost budget (what it
    spent itself); past it, it concludes as an agent does at the session's budget."""
    if execution.parent_execution_id is None or (budget.tokens is None and budget.cost_usd is None):
        return None
    parent = AgentExecution.objects.select_related("stage").filter(id=execution.parent_execution_id).first()
    agent = orchestrator_config(parent) if parent is not None else None
    share = agent.orchestrator.budget_share if agent is not None else None
    if not share:
        return None
    for kind, used, limit in (("tokens", execution.total_tokens, budget.tokens),
                              ("cost_usd", execution.cost_usd, budget.cost_usd)):
        if limit is not None and Decimal(used) >= Decimal(limit) * Decimal(str(share)):
            return (f"Sub-agent budget reached: {_LABELS[kind]} {_figure(float(used))} of its share "
                    f"({share:g}) of {_figure(float(limit))}; concluding with the findings so far")
    return None


class BudgetedTools:
    """The iteration's tool executor, running no more calls than the `tool_calls` budget has left: a model
    asking for several tools at once gets the rest refused (an error result it reads, and a timeline error),
    and its next iteration is the forced conclusion."""

    def __init__(self, tools: ToolExecutor, *, left: int, recorder: Recorder) -> None:
        self._tools, self._left, self._recorder = tools, left, recorder

    def list_tools(self) -> list[ToolDefinition]:
        return self._tools.list_tools()

    def execute(self, call: ToolCall) -> ToolResult:
        if self._left > 0:
            self._left -= 1
            return self._tools.execute(call)
        server, _, tool = call.name.partition(".")
        message = f"Tool call {call.name} not run: the investigation's tool-call budget is used up"
        self._recorder.add_event(TimelineEventType.ERROR, message, event_metadata(
            TimelineEventType.ERROR, server_name=server, tool_name=tool, reason="budget_reached"), status="failed")
        return ToolResult(call=call, is_error=True,
                          content=f"{message}. Conclude with the evidence gathered so far.")


# ---- the global daily spend limit ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DailySpend:
    limit_usd: Decimal | None
    spent_usd: Decimal  # today (UTC) so far

    @property
    def reached(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd


def daily_spend() -> DailySpend:
    """Today's (UTC) estimated spend against `system.daily_spend_limit_usd`."""
    return DailySpend(limit_usd=get_config().system.daily_spend_limit_usd,
                      spent_usd=spend.spend_since(since=spend.utc_day_start()))


def daily_limit_reached() -> bool:
    """Dispatch asks before claiming: once today's spend reaches the limit, new investigations stay queued."""
    return get_config().system.daily_spend_limit_usd is not None and daily_spend().reached


def daily_limit_warning() -> str | None:
    """The system warning while the limit holds investigations back, else None."""
    if get_config().system.daily_spend_limit_usd is None:
        return None  # no limit: every page render and warnings probe skips the sum
    state = daily_spend()
    if not state.reached:
        return None
    queued = AlertSession.objects.filter(status=SessionStatus.PENDING).count()
    return (f"Daily spend limit reached: {usd(state.spent_usd)} of {usd(state.limit_usd)} spent today (UTC). "
            f"{queued} new investigation{'s stay' if queued != 1 else ' stays'} queued until 00:00 UTC "
            "or until the limit is raised")
