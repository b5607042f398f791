"""The demo's extras (#45): memory, approved actions and scoring on the embedded demo only; off with a real provider
and wherever tarsy.yaml names them."""

from __future__ import annotations

from pathlib import Path

import yaml

from agents.config import load_config
from agents.config.demo import REMEDIATION_AGENT, with_demo_features
from agents.mcp.demo_cluster import ACTIONS_SERVER_NAME
from agents.mcp.demo_cluster_writes import STATE_ENV

JOURNAL = "/data/demo-cluster-changes.json"


def _demo(config):
    return with_demo_features(config, state_file=JOURNAL, approvers=["api-client"])


def test_a_real_provider_gets_no_memory_no_actions_and_no_scoring(tmp_path: Path):
    config = _demo(load_config(None, env={"GOOGLE_API_KEY": "k"}))
    assert config.default_provider == "google-default"
    assert not config.actions.enabled and not config.memory.enabled and not config.scoring.enabled
    assert ACTIONS_SERVER_NAME not in config.mcp_servers and REMEDIATION_AGENT not in config.agents
    assert [s.name for s in config.chains["kubernetes"].stages] == ["analysis"]


def test_tarsy_yaml_sections_win_over_the_demo(tmp_path: Path):
    (tmp_path / "tarsy.yaml").write_text(yaml.safe_dump({"actions": {"enabled": False},
                                                         "memory": {"enabled": False}}))
    config = _demo(load_config(tmp_path, env={}))
    assert not config.actions.enabled and not config.memory.enabled
    assert [s.name for s in config.chains["kubernetes"].stages] == ["analysis"]
    assert config.scoring.llm_provider == "demo"  # not named in the file


def test_the_embedded_demo_learns_acts_on_the_demo_cluster_with_approval_and_scores():
    base = load_config(None, env={})
    assert not base.actions.enabled and not base.memory.enabled and not base.scoring.enabled  # off by default
    config = _demo(base)
    assert config.memory.enabled and config.scoring.llm_provider == "demo"
    assert config.actions.enabled and config.actions.approvers == ["api-client"]
    stages = config.chains["kubernetes"].stages
    assert [(s.name, s.type) for s in stages] == [("analysis", "investigation"), ("remediation", "action")]
    assert config.agents[REMEDIATION_AGENT].type == "action"
    server = config.mcp_servers[ACTIONS_SERVER_NAME]
    assert server.actions and "resources_set_limits" in server.action_tools
    assert server.transport.env[STATE_ENV] == JOURNAL == config.mcp_servers["demo-kubernetes"].transport.env[STATE_ENV]
    assert not config.mcp_servers["demo-kubernetes"].actions  # the investigators' server stays read-only
    assert config.cross_reference_problems() == []
