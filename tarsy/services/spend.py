"""Spend: what sessions and days cost, what an investigation has used of its budget, and its budget marker.

Costs are read from the LLM interactions (the source of truth, soft-deleted sessions included: the money
was spent) or from the totals on sessions and executions that the recorder keeps in step with them.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Literal

from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from agents.timeline_events import TimelineEventType
from tarsy.models import AlertSession, LLMInteraction, MCPInteraction

from . import timeline
from .interactions import TOKEN_FIELDS

GroupBy = Literal["day", "chain"]


def utc_day_start(now: datetime | None = None) -> datetime:
    """00:00 UTC of the day `now` (default: now) falls in: the daily spend limit's day."""
    now = now or timezone.now()
    return datetime.combine(now.astimezone(UTC).date(), time.min, tzinfo=UTC)


def spend_since(*, since: datetime) -> Decimal:
    """Estimated USD of every priced LLM call since `since` (the `llm_created` index answers it)."""
    total = LLMInteraction.objects.filter(created_at__gte=since).aggregate(usd=Sum("cost_usd"))["usd"]
    return total or Decimal(0)


def spend_grouped(*, group_by: GroupBy, since: date, until: date) -> list[dict[str, Any]]:
    """Cost and tokens of the calls made on UTC days `since`..`until` (inclusive), per day or per chain,
    largest spend first for chains and in date order for days."""
    start = datetime.combine(since, time.min, tzinfo=UTC)
    end = datetime.combine(until + timedelta(days=1), time.min, tzinfo=UTC)
    calls = LLMInteraction.objects.filter(created_at__gte=start, created_at__lt=end)
    if group_by == "day":
        rows = calls.annotate(key=TruncDate("created_at", tzinfo=UTC)).values("key")
    else:
        rows = calls.values(key=F("session__chain_id"))
    # Annotations are named apart from the columns they sum: a filter on `cost_usd` must see the column.
    rows = rows.annotate(
        usd=Sum("cost_usd"), calls=Count("id"), unpriced=Count("id", filter=Q(cost_usd__isnull=True)),
        sessions=Count("session_id", distinct=True), **{f"sum_{f}": Sum(f) for f in TOKEN_FIELDS},
    ).order_by("key" if group_by == "day" else "-usd")
    return [{"key": str(row["key"]), "cost_usd": row["usd"] or Decimal(0), "calls": row["calls"],
             "unpriced_calls": row["unpriced"], "sessions": row["sessions"],
             **{f: row[f"sum_{f}"] or 0 for f in TOKEN_FIELDS}} for row in rows]


def session_tool_calls(*, session_id: Any) -> int:
    """MCP tool calls the investigation has made so far (its `tool_calls` budget)."""
    return MCPInteraction.objects.filter(session_id=session_id).count()


@transaction.atomic
def session_budget_mark(*, session_id: Any, marker: dict[str, Any], message: str) -> bool:
    """Record, once, that the session reached its budget: the marker on the row and a timeline event.
    False when it was already marked (another agent of the session got there first)."""
    marked = AlertSession.all_objects.filter(id=session_id, budget_reached__isnull=True).update(budget_reached=marker)
    if marked:
        timeline.timeline_event_create(session_id=session_id, event_type=TimelineEventType.BUDGET_REACHED,
                                       content=message,
                                       metadata={k: marker[k] for k in ("kind", "limit", "used")})
    return bool(marked)
