"""Debug records of LLM and MCP calls, and the token and cost totals they add up to."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Case, Count, F, Q, Sum, Value, When
from django.utils import timezone

from agents.context import LLMInteractionRecord, MCPInteractionRecord
from agents.llm.pricing import call_cost, price_for
from agents.llm.types import Usage
from tarsy.config import get_config
from tarsy.metrics import observe_llm_call, observe_mcp_call
from tarsy.models import (
    AgentExecution,
    CallStatus,
    InteractionText,
    LLMInteraction,
    MCPInteraction,
)

from . import counters

MCP_RESULT_STORE_CAP = 512 * 1024  # chars of masked result kept for the debug view
SHARED_TEXT_OVER = 4096  # longer message texts of LLM records are stored once per session (InteractionText)


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


@dataclass
class UsageTally:
    """Token and cost totals of LLM calls not yet applied, and whether any LLM or MCP call happened (the
    session's last_interaction_at). Accumulated while calls are recorded, applied once: see
    services.executions.iteration_complete and `usage_apply_session`."""

    totals: dict[str, Any] = field(default_factory=lambda: dict.fromkeys(TOTAL_FIELDS, 0))
    interacted: bool = False

    def add(self, totals: dict[str, Any]) -> None:
        """`totals`: one call's, from `call_totals`."""
        for name, value in totals.items():
            self.totals[name] += value
        self.interacted = True

    def additions(self) -> dict[str, Any]:
        """The tally as plain amounts to add, by field (none when there is nothing to add)."""
        return dict(self.totals) if any(self.totals.values()) else {}

    def changes(self) -> dict[str, Any]:
        """UPDATE arguments adding the tally to a row's totals (none when there is nothing to add)."""
        if not any(self.totals.values()):
            return {}
        return {f: F(f) + self.totals[f] for f in TOTAL_FIELDS}


def usage_apply_session(*, session_id: Any, usage: UsageTally) -> None:
    """Add a tally to the session's totals (stamping last_interaction_at when a call happened): the session's
    half of the one place usage is applied — an execution's iteration completing
    (services.executions.iteration_complete adds the execution's half in its own UPDATE) or a session-level
    call being stored."""
    counters.session_counters_change(counters.CountersChange(
        session_id, add=usage.additions(), assign={"last_interaction_at": timezone.now()} if usage.interacted else {}))


@transaction.atomic(savepoint=False)  # joins the caller's batch without a savepoint
def llm_interaction_record(
    *, session_id: Any, execution_id: Any, iteration: int, record: LLMInteractionRecord,
    add_to_totals: bool = True,
) -> LLMInteraction:
    """Store the call with its estimated cost. An execution's calls count when their iteration completes (the
    recorder's write batch stores and tallies them); a session-level call (the executive summary) is its own
    completion, so `add_to_totals` adds it to the session's totals here, in the same transaction."""
    if add_to_totals and execution_id is not None:
        raise ValueError("an execution's calls count towards the totals when their iteration completes")
    row = llm_interaction_row(session_id=session_id, execution_id=execution_id, iteration=iteration, record=record)
    interaction_texts_store(session_id=session_id, texts=llm_texts_share(row))
    row.save(force_insert=True)
    if add_to_totals:
        usage_apply_session(session_id=session_id, usage=UsageTally(totals=call_totals(record)))
    llm_interaction_observe(record, row)
    return row


def llm_interaction_row(*, session_id: Any, execution_id: Any, iteration: int,
                        record: LLMInteractionRecord) -> LLMInteraction:
    """The unsaved row of one LLM call, with its estimated cost (None when the model has no price)."""
    usage = record.usage
    totals = call_totals(record)
    return LLMInteraction(
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


# What a call's completion writes over its started row.
CALL_RESULT_FIELDS = ("interaction_type", "provider", "model", "conversation", "thinking_content", *TOKEN_FIELDS,
                      "cost_usd", "duration_ms", "success", "error_message", "status")
INTERRUPTED_MESSAGE = "interrupted: the process making the call stopped before it ended"


def llm_call_started_row(*, session_id: Any, execution_id: Any, iteration: int, interaction_type: str,
                         provider: str, model: str) -> LLMInteraction:
    """The unsaved row of an LLM call that is starting: no reply and no tokens yet (its cost is zero so far)."""
    return LLMInteraction(session_id=session_id, execution_id=execution_id, iteration=iteration,
                          interaction_type=interaction_type, provider=provider, model=model, cost_usd=Decimal(0),
                          success=False, status=CallStatus.STARTED)


def llm_call_open(*, execution: AgentExecution, iteration: int) -> LLMInteraction:
    """Written with the iteration's claim: the row of its first LLM call, in the claim's transaction, so the call
    leaves a row even if its process dies (the recorder completes it, or the sweeper closes it as interrupted)."""
    row = llm_call_started_row(session_id=execution.session_id, execution_id=execution.id, iteration=iteration,
                               interaction_type="iteration", provider=execution.llm_provider, model="")
    row.save(force_insert=True)
    return row


def llm_call_completed(started: LLMInteraction, done: LLMInteraction) -> None:
    """Carry a finished call's record (`done`, unsaved) over to the row written when it started."""
    for name in CALL_RESULT_FIELDS:
        setattr(started, name, getattr(done, name))


def llm_calls_close_interrupted(*, now: Any) -> int:
    """Close the rows of calls whose process died mid-call (the sweeper): a started call of an execution whose
    lease ran out, that moved on to another iteration, or that ended, is interrupted; its tokens so far stay
    (a re-run of the iteration counts them in spend when it supersedes the attempt). Returns how many."""
    live = Q(execution__lease_expires_at__gt=now, execution__current_iteration=F("iteration"))
    return LLMInteraction.objects.filter(status=CallStatus.STARTED, execution__isnull=False).exclude(live).update(
        status=CallStatus.INTERRUPTED, success=False, error_message=INTERRUPTED_MESSAGE)


def llm_texts_share(row: LLMInteraction) -> dict[str, str]:
    """Name the long message texts of an unsaved LLM record by digest (`content_ref`) in its conversation, and
    return them by digest for `interaction_texts_store`: one large alert or tool result is then stored once for
    the session, not again with every later call that resends it."""
    texts: dict[str, str] = {}
    shared = []
    for message in row.conversation:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and len(content) > SHARED_TEXT_OVER:
            digest = hashlib.sha256(content.encode()).hexdigest()
            texts[digest] = content
            message = {**message, "content": "", "content_ref": digest}
        shared.append(message)
    row.conversation = shared
    return texts


def interaction_texts_store(*, session_id: Any, texts: dict[str, str]) -> None:
    """Store the texts the session does not hold yet (nothing, and no statement, when there are none)."""
    if not texts:
        return
    stored = set(InteractionText.objects.filter(session_id=session_id, digest__in=texts)
                 .values_list("digest", flat=True))
    InteractionText.objects.bulk_create(  # a concurrent writer of the same text (a re-run attempt) is no conflict
        [InteractionText(session_id=session_id, digest=d, text=t) for d, t in texts.items() if d not in stored],
        ignore_conflicts=True)


def llm_interaction_observe(record: LLMInteractionRecord, row: LLMInteraction) -> None:
    """Count a stored call in the metrics (once its row is written)."""
    observe_llm_call(provider=record.provider, model=record.model, success=record.success,
                     duration_ms=record.duration_ms, usage=record.usage, cost_usd=row.cost_usd)


def mcp_interaction_row(*, session_id: Any, execution_id: Any, iteration: int,
                        record: MCPInteractionRecord) -> MCPInteraction:
    """The unsaved row of one tool call (a huge result is capped)."""
    result = record.result
    if len(result) > MCP_RESULT_STORE_CAP:
        result = result[:MCP_RESULT_STORE_CAP] + f"\n[truncated: {len(record.result)} chars in total]"
    return MCPInteraction(
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


def mcp_interaction_observe(record: MCPInteractionRecord) -> None:
    observe_mcp_call(server=record.server, tool=record.tool, success=record.success, duration_ms=record.duration_ms)


def interactions_keep_superseded(*, session_id: Any, execution_id: Any, rows: list[Any],
                                  texts: dict[str, str]) -> None:
    """The unsaved LLM and MCP records of an attempt fenced out by a later one (services.recorder.batch): they are
    stored marked superseded and their tokens and cost added to the execution's and the session's totals — the
    calls were made and paid for — while nothing else of the attempt lands."""
    llm = [row for row in rows if isinstance(row, LLMInteraction)]
    mcp = [row for row in rows if isinstance(row, MCPInteraction)]
    for call in llm:
        call.superseded = True
    for tool_call in mcp:
        tool_call.superseded = True
    interaction_texts_store(session_id=session_id, texts=texts)
    LLMInteraction.objects.bulk_create([call for call in llm if call.pk is None])
    for started in [call for call in llm if call.pk is not None]:  # written when it started: completed here
        started.save(update_fields=[*CALL_RESULT_FIELDS, "superseded"])
    MCPInteraction.objects.bulk_create(mcp)
    usage = UsageTally()
    for call in llm:
        usage.add({**{f: getattr(call, f) for f in TOKEN_FIELDS}, "cost_usd": call.cost_usd or Decimal(0),
                   "unpriced_calls": int(call.cost_usd is None)})
    _add_spent(session_id=session_id, execution_id=execution_id, usage=usage)


def _add_spent(*, session_id: Any, execution_id: Any, usage: UsageTally) -> None:
    """Add the tokens and cost of calls outside any completed iteration (superseded attempts) to the execution's
    and its session's totals (`session_id` None: the execution's session, looked up when there is spend)."""
    changes = usage.changes()
    if changes:
        AgentExecution.objects.filter(id=execution_id).update(**changes)
        if session_id is None:
            session_id = AgentExecution.objects.filter(id=execution_id).values_list("session_id", flat=True).get()
        counters.session_counters_change(counters.CountersChange(session_id, add=usage.additions()))


def interactions_supersede_iteration(*, execution_id: Any, iteration: int) -> None:
    """An interrupted attempt's LLM and MCP records stay, marked superseded, when the iteration runs again: the
    trace keeps every call and the analysis leaves them out. Their tokens and cost never reached the totals (an
    iteration's usage is applied when it completes), so they are added to the execution's and the session's
    here: the money was spent. Call under the execution's row lock (the claim), which makes the sum and the
    marking one step."""
    calls = LLMInteraction.objects.filter(execution_id=execution_id, iteration=iteration, superseded=False)
    sums = calls.aggregate(**{f"sum_{f}": Sum(f) for f in (*TOKEN_FIELDS, "cost_usd")},
                           unpriced=Count("id", filter=Q(cost_usd__isnull=True)))
    calls.update(superseded=True, status=Case(When(status=CallStatus.STARTED, then=Value(CallStatus.INTERRUPTED)),
                                              default=F("status")))
    MCPInteraction.objects.filter(execution_id=execution_id, iteration=iteration, superseded=False).update(
        superseded=True)
    usage = UsageTally(totals={**{f: sums[f"sum_{f}"] or 0 for f in (*TOKEN_FIELDS, "cost_usd")},
                               "unpriced_calls": sums["unpriced"]})
    _add_spent(session_id=None, execution_id=execution_id, usage=usage)
