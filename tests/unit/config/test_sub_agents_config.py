"""`sub_agents` and `orchestrator`: names checked at load, cycles refused, guardrail defaults, `orchestrate`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agents.config import ConfigError, load_config

PROVIDERS = {"gemini": {"type": "google", "model": "gemini-2.5-pro"}}


def _load(directory: Path, agents: dict, stage: dict | None = None):
    directory.mkdir(parents=True, exist_ok=True)
    chain = {"c": {"alert_types": ["x"], "stages": [stage or {"name": "s", "agents": [{"name": "Lead"}]}]}}
    tarsy = {"defaults": {"llm_provider": "gemini"}, "agents": agents, "agent_chains": chain}
    (directory / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    (directory / "llm-providers.yaml").write_text(yaml.safe_dump({"llm_providers": PROVIDERS}))
    return load_config(directory, env={})


def test_an_unknown_sub_agent_is_a_load_error(tmp_path):
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, {"Lead": {"sub_agents": ["Pods", "Ghost"]}, "Pods": {}})
    assert "tarsy.yaml: agents.Lead.sub_agents.1: unknown agent 'Ghost'" in "\n".join(err.value.problems)


def test_agents_dispatching_each_other_in_a_cycle_is_a_load_error(tmp_path):
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, {"Lead": {"sub_agents": ["Pods"]}, "Pods": {"sub_agents": ["Net"]},
                         "Net": {"sub_agents": ["Lead"]}})
    assert "agents.Lead.sub_agents: agents dispatch each other in a cycle (Lead -> Pods -> Net -> Lead)" in \
        "\n".join(err.value.problems)


def test_guardrails_default_to_one_level_and_a_wait_for_a_slot(tmp_path):
    config = _load(tmp_path, {"Lead": {"sub_agents": ["Pods"], "orchestrator": {"max_concurrent": 2,
                                                                               "timeout": "5m"}},
                              "Pods": {"mcp_servers": ["tarsy"]}})
    limits = config.agents["Lead"].orchestrator
    assert (limits.max_concurrent, limits.max_depth, limits.timeout, limits.on_limit) == (2, 1, 300.0, "wait")
    assert "tarsy" in config.mcp_servers_in_use()  # a sub-agent's servers are in use


def test_orchestrate_makes_a_stage_with_several_agents_not_parallel(tmp_path):
    stage = {"name": "s", "orchestrate": True, "agents": [{"name": "Pods"}, {"name": "Net"}]}
    config = _load(tmp_path, {"Pods": {}, "Net": {}}, stage=stage)
    assert not config.chain("c").stages[0].is_parallel
    assert "Orchestrator" in config.agents
