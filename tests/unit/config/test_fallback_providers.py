"""`fallback_providers`: checked at load, resolved defaults → agent → chain, skipped when losing native tools."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agents.config import ConfigError, load_config
from agents.context import resolve_agent

PROVIDERS = {
    "gemini": {"type": "google", "model": "gemini-2.5-pro"},
    "gemini-flash": {"type": "google", "model": "gemini-2.5-flash"},
    "gpt": {"type": "openai", "model": "gpt-4o"},
    "claude": {"type": "anthropic", "model": "claude-sonnet"},
}


def _load(directory: Path, tarsy: dict):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    (directory / "llm-providers.yaml").write_text(yaml.safe_dump({"llm_providers": PROVIDERS}))
    return load_config(directory, env={})


def _chain(agent: str = "A", **extra) -> dict:
    return {"c": {"alert_types": ["x"], "stages": [{"name": "s", "agents": [{"name": agent}]}], **extra}}


def test_an_unknown_fallback_provider_is_a_load_error_wherever_it_is_named(tmp_path):
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, {"defaults": {"llm_provider": "gemini", "fallback_providers": ["ghost-1"]},
                         "agents": {"A": {"fallback_providers": ["gpt", "ghost-2"]}},
                         "agent_chains": _chain(fallback_providers=["ghost-3"])})
    problems = "\n".join(err.value.problems)
    assert "tarsy.yaml: defaults.fallback_providers.0: unknown llm provider 'ghost-1'" in problems
    assert "tarsy.yaml: agents.A.fallback_providers.1: unknown llm provider 'ghost-2'" in problems
    assert "tarsy.yaml: agent_chains.c.fallback_providers.0: unknown llm provider 'ghost-3'" in problems


def test_the_chain_overrides_the_agent_which_overrides_the_defaults(tmp_path):
    config = _load(tmp_path, {"defaults": {"llm_provider": "gemini", "fallback_providers": ["gpt"]},
                              "agents": {"A": {"fallback_providers": ["claude"]}, "B": {}},
                              "agent_chains": {**_chain(fallback_providers=["gemini-flash", "gpt"]),
                                               "d": _chain("B")["c"] | {"alert_types": ["y"]}}})

    def names(**kwargs):
        return [name for name, _ in resolve_agent(config, **kwargs).fallback_providers]

    assert names(agent_name="B", chain_id="d", stage_index=0, stage_agent_index=0) == ["gpt"]
    assert names(agent_name="A") == ["claude"]
    assert names(agent_name="A", chain_id="c", stage_index=0, stage_agent_index=0) == ["gemini-flash", "gpt"]


def test_once_a_fallback_answers_only_the_providers_after_it_remain(tmp_path):
    config = _load(tmp_path, {"defaults": {"llm_provider": "gemini", "fallback_providers": ["gpt", "claude"]},
                              "agents": {"A": {}}})

    on_gpt = resolve_agent(config, agent_name="A", provider_override="gpt")

    assert (on_gpt.llm_provider_name, on_gpt.configured_provider_name) == ("gpt", "gemini")
    assert [name for name, _ in on_gpt.fallback_providers] == ["claude"]
    on_last = resolve_agent(config, agent_name="A", provider_override="claude")
    assert on_last.fallback_providers == ()


def test_a_fallback_that_would_lose_a_required_native_tool_is_skipped(tmp_path):
    config = _load(tmp_path, {"defaults": {"llm_provider": "gemini", "fallback_providers": ["gpt", "gemini-flash"]},
                              "agents": {"Searcher": {"iteration_strategy": "native-thinking",
                                                      "native_tools": {"google_search": True}},
                                         "Reacting": {"iteration_strategy": "react",
                                                      "native_tools": {"google_search": True}}}})

    searcher = resolve_agent(config, agent_name="Searcher")

    assert [name for name, _ in searcher.fallback_providers] == ["gemini-flash"]
    assert searcher.skipped_fallbacks == (("gpt", "it cannot run the native tools google_search"),)
    # ReAct never asks for native tools, so no fallback loses one
    assert [name for name, _ in resolve_agent(config, agent_name="Reacting").fallback_providers] == ["gpt",
                                                                                                    "gemini-flash"]
