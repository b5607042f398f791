"""Debug records of LLM and MCP calls, and the token and cost totals they add up to."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agents.context import LLMInteractionRecord, MCPInteractionRecord
from agents.llm.pricing import call_cost, price_for
from agents.llm.types import Usage
from tarsy.config import get_config
from tarsy.metrics import observe_llm_call, observe_mcp_call
from tarsy.models import AgentExecution, AlertSession, LLMInteraction, MCPInteraction

MCP_RESULT_STORE_CAP = 512 * 1024  # chars of masked result kept for the debug view (ANCHORS: 512 KB)


@transaction.atomic(savepoint=False)  # joins the caller's batch without a savepoint
def llm_interaction_record(
    *, session_id: Any, execution_id: Any, iteration: int, record: LLMInteractionRecord, touch_session: bool = False,
    add_to_totals: bool = True,
) -> LLMInteraction:
    """Store the call with its estimated cost and add both to the totals; `touch_session` also stamps the
    session's last_interaction_at, in the same statement as its totals. `add_to_totals=False`: the caller adds
    `call_totals(record)` itself, in the same transaction (a batch of several calls in one statement per row)."""
    usage = record.usage
    totals = call_totals(record)
    row = LLMInteraction.objects.create(
        session_id=session_id,
        execution_id=execution_id,
        iteration=iteration,
        interaction_type=record.interaction_type,
        provider=record.provider,
        model=record.model,
        conversation=record.conversation,
        thinking_content=record.thinking_content,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        thinking_tokens=usage.thinking_tokens,
        total_tokens=usage.total_tokens,
        cached_tokens=usage.cached_tokens,
        cost_usd=None if totals["unpriced_calls"] else totals["cost_usd"],
        duration_ms=record.duration_ms,
        success=record.success,
        error_message=record.error_message,
    )
    if add_to_totals:
        add_tokens(session_id=session_id, execution_id=execution_id, sign=1, counts=totals,
                   session_fields={"last_interaction_at": timezone.now()} if touch_session else None)
    observe_llm_call(provider=record.provider, model=record.model, success=record.success,
                     duration_ms=record.duration_ms, usage=usage, cost_usd=row.cost_usd)
    return row


TOKEN_FIELDS = ("input_tokens", "output_tokens", "thinking_tokens", "total_tokens", "cached_tokens")
TOTAL_FIELDS = (*TOKEN_FIELDS, "cost_usd", "unpriced_calls")  # what a row's totals add up, per call


def llm_call_cost(*, provider: str, model: str, usage: Usage) -> Decimal | None:
    """USD of one call at the configured prices; None when its model has no price (or its provider is gone)."""
    provider_cfg = get_config().llm_providers.get(provider)
    return call_cost(usage, price_for(provider_cfg, model)) if provider_cfg is not None else None


def call_totals(record: LLMInteractionRecord) -> dict[str, Any]:
    """What one call adds to its execution's and session's totals."""
    cost = llm_call_cost(provider=record.provider, model=record.model, usage=record.usage)
    return {**{f: getattr(record.usage, f) for f in TOKEN_FIELDS},
            "cost_usd": cost or Decimal(0), "unpriced_calls": int(cost is None)}


def row_totals(row: LLMInteraction) -> dict[str, Any]:
    """What a stored call added to the totals."""
    return {**{f: getattr(row, f) for f in TOKEN_FIELDS}, "cost_usd": row.cost_usd or Decimal(0),
            "unpriced_calls": int(row.cost_usd is None)}


def token_changes(counts: dict[str, Any], sign: int = 1) -> dict[str, Any]:
    """UPDATE arguments adding `counts` to a row's totals (none when there is nothing to add)."""
    if not any(counts.get(f) for f in TOTAL_FIELDS):
        return {}
    return {f: F(f) + sign * counts.get(f, 0) for f in TOTAL_FIELDS}


def add_tokens(*, session_id: Any, execution_id: Any, sign: int, counts: dict[str, Any],
               session_fields: dict[str, Any] | None = None) -> None:
    """Add to the execution's (when given) and the session's totals: the execution row first, as everywhere."""
    changes = token_changes(counts, sign)
    if changes and execution_id:
        AgentExecution.objects.filter(id=execution_id).update(**changes)
    if changes or session_fields:
        AlertSession.all_objects.filter(id=session_id).update(**changes, **(session_fields or {}))


def token_totals_subtract(*, execution_id: Any, rows: list[LLMInteraction]) -> None:
    """Discarded calls (an interrupted attempt being re-run) no longer count towards the totals."""
    for row in rows:
        add_tokens(session_id=row.session_id, execution_id=execution_id, sign=-1, counts=row_totals(row))


def mcp_interaction_record(
    *, session_id: Any, execution_id: Any, iteration: int, record: MCPInteractionRecord
) -> MCPInteraction:
    result = record.result
    if len(result) > MCP_RESULT_STORE_CAP:
        result = result[:MCP_RESULT_STORE_CAP] + f"\n[truncated: {len(record.result)} chars in total]"
    observe_mcp_call(server=record.server, tool=record.tool, success=record.success, duration_ms=record.duration_ms)
    return MCPInteraction.objects.create(
        session_id=session_id,
        execution_id=execution_id,
        iteration=iteration,
        server=record.server,
        tool=record.tool,
        arguments=record.arguments,
        result=result,
        raw_size=record.raw_size,
        summarized=record.summarized,
        available_tools=record.available_tools,
        duration_ms=record.duration_ms,
        success=record.success,
        error_message=record.error_message,
    )


def interactions_discard_iteration(*, execution_id: Any, iteration: int) -> None:
    """An interrupted attempt's LLM and MCP records go, and its calls' tokens leave the totals."""
    calls = LLMInteraction.objects.filter(execution_id=execution_id, iteration=iteration)
    token_totals_subtract(execution_id=execution_id, rows=list(calls))
    calls.delete()
    MCPInteraction.objects.filter(execution_id=execution_id, iteration=iteration).delete()
