"""Budgets: which limit is reached, and how a chain's budget combines with the defaults'."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pydantic import ValidationError

from agents.config.schema import BudgetConfig, SystemConfig
from tarsy.pipeline.budget import BudgetHit, budget_hit

USED = {"tokens": 1000, "cost_usd": Decimal("0.5"), "tool_calls": 3, "wall_time_s": 90.0}


@pytest.mark.parametrize(("budget", "kind"), [
    ({"tokens": 1000}, "tokens"),
    ({"cost_usd": "0.5"}, "cost_usd"),
    ({"tool_calls": 3}, "tool_calls"),
    ({"wall_time": "90s"}, "wall_time"),
    ({"tokens": 5000, "tool_calls": 2}, "tool_calls"),
])
def test_a_limit_is_reached_when_the_usage_meets_it(budget, kind):
    hit = budget_hit(BudgetConfig(**budget), **USED)
    assert hit is not None and hit.kind == kind


@pytest.mark.parametrize("budget", [{}, {"tokens": 1001}, {"cost_usd": "0.51", "tool_calls": 4, "wall_time": "2m"}])
def test_usage_below_every_limit_reaches_none(budget):
    assert budget_hit(BudgetConfig(**budget), **USED) is None


def test_the_message_says_which_limit_and_how_much():
    assert BudgetHit(kind="cost_usd", limit=0.5, used=0.5123).message.startswith(
        "Budget reached: estimated cost (USD) 0.5123 of 0.5;")
    assert BudgetHit(kind="wall_time", limit=1200, used=1201).marker()["used"] == 1201


def test_a_chains_budget_overrides_the_defaults_limit_by_limit():
    from agents.config.registry import TarsyConfig
    from agents.config.schema import ChainConfig, DefaultsConfig, QueueConfig

    chain = ChainConfig(stages=[{"name": "s", "agents": [{"name": "A"}]}], budget={"tool_calls": 2})
    config = TarsyConfig(defaults=DefaultsConfig(budget={"tool_calls": 10, "wall_time": "20m"}), queue=QueueConfig(),
                         system=SystemConfig(), llm_providers={}, mcp_servers={}, agents={},
                         chains={"c": chain, "plain": chain.model_copy(update={"budget": None})}, default_provider="")
    assert config.budget("c") == BudgetConfig(tool_calls=2, wall_time=1200)
    assert config.budget("plain") == BudgetConfig(tool_calls=10, wall_time=1200)
    assert config.budget("gone") == BudgetConfig(tool_calls=10, wall_time=1200)


@pytest.mark.parametrize("budget", [{"tokens": 0}, {"cost_usd": "-1"}, {"tool_calls": "many"}, {"wall_time": "soon"},
                                    {"requests": 3}])
def test_an_invalid_budget_is_refused_at_load_time(budget):
    with pytest.raises(ValidationError):
        BudgetConfig(**budget)


def test_daily_limit_accepts_zero_as_a_stop_and_refuses_negatives():
    assert SystemConfig(daily_spend_limit_usd="0").daily_spend_limit_usd == Decimal(0)
    with pytest.raises(ValidationError):
        SystemConfig(daily_spend_limit_usd="-5")
