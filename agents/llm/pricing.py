"""What an LLM call cost: a price table (bundled snapshot, overridable per provider) applied to its usage.

Pure: no Django, no I/O beyond reading the bundled snapshot once. A model without a price has an unknown
cost (None), never 0 — a wrong zero would hide spend; the demo provider runs locally and is free.
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache
from pathlib import Path

import yaml

from agents.config.schema import LLMProviderConfig, ModelPricing

from .types import Usage

SNAPSHOT_FILE = Path(__file__).with_name("pricing_snapshot.yaml")
PER_MTOK = Decimal(1_000_000)
COST_PLACES = Decimal("1e-10")  # the stored precision: one token of the cheapest model is ~1e-8 USD
FREE = ModelPricing(input_per_mtok=0, output_per_mtok=0, cached_input_per_mtok=0, as_of="2025-01-01")
_VERSION_SUFFIX = re.compile(r"^-(\d[\d-]*|preview(-[\w.-]+)?|latest|exp(-[\w.-]+)?)$")
FREE_TYPES = frozenset({"demo"})  # runs in-process: no vendor bills it


@lru_cache(maxsize=1)
def bundled_prices() -> dict[str, ModelPricing]:
    """The snapshot's models, each stamped with the snapshot's date."""
    data = yaml.safe_load(SNAPSHOT_FILE.read_text())
    return {name: ModelPricing(**entry, as_of=data["as_of"]) for name, entry in data["models"].items()}


def bundled_price(model: str) -> ModelPricing | None:
    """Exact name first, else the longest snapshot name it extends with a version suffix only
    (`gemini-2.5-flash-preview-05-20`, `claude-sonnet-4-5-20250929`); `gpt-4o-audio-preview` is another
    model, so it has no price rather than gpt-4o's."""
    prices = bundled_prices()
    name = model.removeprefix("models/").strip().lower()
    if name in prices:
        return prices[name]
    versions = [key for key in prices if name.startswith(key) and _VERSION_SUFFIX.match(name[len(key):])]
    return prices[max(versions, key=len)] if versions else None


def price_for(provider: LLMProviderConfig, model: str | None = None) -> ModelPricing | None:
    """The provider's own `pricing` wins; then free for the in-process demo; then the snapshot by model name — except
    for a self-hosted server, whose hardware no snapshot knows the price of (a model it serves may share a vendor
    model's name)."""
    if provider.pricing is not None:
        return provider.pricing
    if provider.type in FREE_TYPES:
        return FREE
    if provider.self_hosted:
        return None
    return bundled_price(model or provider.model) if (model or provider.model) else None


def call_cost(usage: Usage, pricing: ModelPricing | None) -> Decimal | None:
    """USD of one call. Input tokens include the cached ones (as every vendor reports them), billed at the
    cache rate; thinking tokens are reported apart from output and billed at the thinking (else output) rate."""
    if pricing is None:
        return None
    cached = min(max(usage.cached_tokens, 0), usage.input_tokens)
    thinking_rate = pricing.thinking_per_mtok if pricing.thinking_per_mtok is not None else pricing.output_per_mtok
    micro = ((usage.input_tokens - cached) * pricing.input_per_mtok + cached * pricing.cached_input_per_mtok
             + usage.output_tokens * pricing.output_per_mtok + usage.thinking_tokens * thinking_rate)
    return (micro / PER_MTOK).quantize(COST_PLACES)
