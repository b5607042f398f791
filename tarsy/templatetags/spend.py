"""Template filters for spend: an estimated cost as people read it, unknown shown as such (never as $0)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import template

from tarsy.pipeline.budget import usd

register = template.Library()


@register.filter
def cost(row: Any) -> str:
    """`row` has cost_usd and unpriced_calls (a session's counters, an execution); empty for a session made
    without its counters row (the template passes its missing row as "")."""
    if not row:
        return ""
    amount: Decimal = row.cost_usd or Decimal(0)
    unpriced = row.unpriced_calls or 0
    if unpriced and not amount:
        return "unknown"
    text = usd(amount)
    return f"{text} + {unpriced} unpriced call{'s' if unpriced != 1 else ''}" if unpriced else text


@register.filter
def call_cost(value: Decimal | None) -> str:
    """One LLM call's cost: null means its model has no price."""
    return "unknown" if value is None else usd(value)
