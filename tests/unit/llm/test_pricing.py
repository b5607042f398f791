"""Prices: the bundled snapshot by model name, a provider's own `pricing` over it, unknown models unpriced."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from pydantic import ValidationError

from agents.config.schema import LLMProviderConfig, ModelPricing
from agents.llm.pricing import bundled_price, bundled_prices, call_cost, price_for
from agents.llm.types import Usage


def test_every_builtin_provider_model_has_a_dated_bundled_price():
    from agents.config.builtins import builtin_providers

    for name, provider in builtin_providers().items():
        if provider.type in ("demo", "scripted"):
            continue
        price = price_for(provider)
        assert price is not None, f"{name}: {provider.model} has no bundled price"
        assert isinstance(price.as_of, datetime.date)
    assert all(p.output_per_mtok >= p.input_per_mtok >= p.cached_input_per_mtok for p in bundled_prices().values())


@pytest.mark.parametrize(("model", "priced_as"), [
    ("gemini-2.5-pro", "gemini-2.5-pro"),
    ("models/gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"),
    ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("gpt-4o-audio-preview", None),  # another model, not a version of gpt-4o
    ("my-finetune", None),
])
def test_versions_of_a_model_share_its_price_and_other_models_have_none(model, priced_as):
    assert bundled_price(model) == (bundled_prices()[priced_as] if priced_as else None)


def test_cost_bills_cached_input_and_thinking_at_their_rates():
    pricing = ModelPricing(input_per_mtok="1.25", output_per_mtok="10", cached_input_per_mtok="0.125",
                           as_of="2025-11-18")
    usage = Usage(input_tokens=1000, cached_tokens=200, output_tokens=100, thinking_tokens=50, total_tokens=1150)
    # 800 × 1.25 + 200 × 0.125 + 100 × 10 + 50 × 10 (thinking at the output rate) = 2525 micro-USD
    assert call_cost(usage, pricing) == Decimal("0.002525")
    priced_thinking = pricing.model_copy(update={"thinking_per_mtok": Decimal("20")})
    assert call_cost(usage, priced_thinking) == Decimal("0.003025")


def test_unknown_price_is_none_never_zero_and_demo_is_free():
    usage = Usage(input_tokens=10, output_tokens=10, total_tokens=20)
    assert call_cost(usage, price_for(LLMProviderConfig(type="openai", model="my-finetune"))) is None
    assert call_cost(usage, price_for(LLMProviderConfig(type="scripted", script=[]))) is None
    assert call_cost(usage, price_for(LLMProviderConfig(type="demo"))) == Decimal(0)


def test_provider_pricing_overrides_the_snapshot():
    provider = LLMProviderConfig(type="google", model="gemini-2.5-pro", pricing={
        "input_per_mtok": "2", "output_per_mtok": "4", "cached_input_per_mtok": "1", "as_of": "2026-01-02"})
    assert price_for(provider).input_per_mtok == Decimal("2")
    assert call_cost(Usage(input_tokens=1_000_000), price_for(provider)) == Decimal("2")


@pytest.mark.parametrize("pricing", [
    {"input_per_mtok": "1", "output_per_mtok": "2", "cached_input_per_mtok": "0.5"},  # no date
    {"input_per_mtok": "-1", "output_per_mtok": "2", "cached_input_per_mtok": "0.5", "as_of": "2026-01-02"},
    {"input_per_mtok": "1", "output_per_mtok": "2", "cached_input_per_mtok": "0.5", "as_of": "2026-01-02",
     "currency": "EUR"},
])
def test_invalid_pricing_is_refused_at_load_time(pricing):
    with pytest.raises(ValidationError):
        LLMProviderConfig(type="openai", model="gpt-4o", pricing=pricing)


def test_metrics_count_usd_by_provider_and_model_and_cached_tokens_by_kind():
    from prometheus_client import REGISTRY

    from tarsy.metrics import observe_llm_call

    def sample(name, **labels):
        return REGISTRY.get_sample_value(name, labels) or 0.0

    labels = {"provider": "priced-test", "model": "m-1"}
    before = (sample("tarsy_llm_cost_usd_total", **labels), sample("tarsy_llm_tokens_total", **labels, kind="cached"),
              sample("tarsy_llm_unpriced_calls_total", **labels))
    usage = Usage(input_tokens=1000, cached_tokens=600, output_tokens=10, total_tokens=1010)
    observe_llm_call(success=True, duration_ms=5, usage=usage, cost_usd=Decimal("0.0125"), **labels)
    observe_llm_call(success=True, duration_ms=5, usage=usage, cost_usd=None, **labels)
    after = (sample("tarsy_llm_cost_usd_total", **labels), sample("tarsy_llm_tokens_total", **labels, kind="cached"),
             sample("tarsy_llm_unpriced_calls_total", **labels))
    assert after[0] - before[0] == pytest.approx(0.0125)
    assert (after[1] - before[1], after[2] - before[2]) == (1200, 1)


def test_a_used_provider_without_a_price_is_a_config_warning(tmp_path):
    from tests.support.configdir import write_config

    config = write_config(tmp_path, tarsy={"defaults": {"llm_provider": "gateway"}}, providers={
        "gateway": {"type": "openai", "model": "our-model", "api_key_env": "K"},
        "priced": {"type": "openai", "model": "our-model", "api_key_env": "K", "pricing": {
            "input_per_mtok": 1, "output_per_mtok": 2, "cached_input_per_mtok": 1, "as_of": "2026-11-01"}},
    }, activate=False)
    warnings = config.warnings(env={"K": "set"})
    assert [w for w in warnings if "no price" in w] == [
        "LLM provider 'gateway': model 'our-model' has no price (its calls' cost shows as unknown); "
        "set `pricing` on the provider"]


def test_a_self_hosted_model_has_no_price_unless_one_is_configured():
    """Ollama/vLLM/LM Studio (`type: openai`, a base_url, no key): a snapshot price would be a vendor's, not yours;
    unknown (None) is the truth, never 0."""
    local = LLMProviderConfig(type="openai", model="gpt-4o", base_url="http://ollama:11434/v1")
    pricing = ModelPricing(input_per_mtok=0.1, output_per_mtok=0.2, cached_input_per_mtok=0, as_of="2026-11-01")
    priced = local.model_copy(update={"pricing": pricing})
    gateway = local.model_copy(update={"api_key_env": "GATEWAY_KEY"})  # a keyed proxy to the vendor: its price

    assert local.self_hosted and price_for(local) is None
    assert price_for(priced) == priced.pricing
    assert not gateway.self_hosted and price_for(gateway) == bundled_price("gpt-4o")
