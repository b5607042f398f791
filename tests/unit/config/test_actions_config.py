"""Approved actions' config: action servers need their allow-list and reach action agents only; off by default."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agents.config import ConfigError, load_config
from agents.mcp.selection import validate_mcp_selection

PROVIDERS = {"gemini": {"type": "google", "model": "gemini-2.5-pro"}}
WRITE = {"transport": {"type": "stdio", "command": "k8s-mcp"}, "actions": True, "action_tools": ["resources_scale"]}
READ = {"transport": {"type": "stdio", "command": "k8s-mcp"}}


def _load(directory: Path, agents: dict, stage: dict | None = None, chain: dict | None = None,
          servers: dict | None = None, actions: dict | None = None):
    directory.mkdir(parents=True, exist_ok=True)
    chains = {"c": {"alert_types": ["x"], **(chain or {}),
                    "stages": [stage or {"name": "s", "agents": [{"name": next(iter(agents))}]}]}}
    tarsy = {"defaults": {"llm_provider": "gemini"}, "agents": agents, "agent_chains": chains,
             "mcp_servers": servers or {"k8s-write": WRITE, "k8s": READ}, **({"actions": actions} if actions else {})}
    (directory / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    (directory / "llm-providers.yaml").write_text(yaml.safe_dump({"llm_providers": PROVIDERS}))
    return load_config(directory, env={})


def _problems(directory: Path, **kwargs) -> str:
    with pytest.raises(ConfigError) as err:
        _load(directory, **kwargs)
    return "\n".join(err.value.problems)


def test_defaults_are_off_one_pending_and_an_hour(tmp_path):
    config = _load(tmp_path, {"Fixer": {"type": "action", "mcp_servers": ["k8s-write"]}},
                   stage={"name": "act", "type": "action", "agents": [{"name": "Fixer"}]})
    assert (config.actions.enabled, config.actions.approval_ttl, config.actions.max_pending_per_session) == \
        (False, 3600.0, 1)
    assert config.agents["Fixer"].type == "action" and config.chain("c").stages[0].type == "action"


def test_actions_true_needs_an_allow_list(tmp_path):
    servers = {"k8s-write": {**WRITE, "action_tools": []}}
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, {"Fixer": {"type": "action"}}, servers=servers)
    assert "actions: true needs action_tools" in str(err.value)


@pytest.mark.parametrize("where", ["agent", "chain", "stage_agent"])
def test_a_non_action_agent_reaching_an_action_server_is_a_load_error(tmp_path, where):
    agents = {"Pods": {"mcp_servers": ["k8s-write"] if where == "agent" else ["k8s"]}}
    chain = {"mcp_servers": ["k8s-write"]} if where == "chain" else None
    stage = {"name": "s", "agents": [{"name": "Pods", "mcp_servers": ["k8s-write"]}]} \
        if where == "stage_agent" else None
    problems = _problems(tmp_path, agents=agents, chain=chain, stage=stage)
    assert "action server 'k8s-write' reaches agent 'Pods', which is not of type action" in problems


def test_an_action_stage_runs_action_agents_only(tmp_path):
    problems = _problems(tmp_path, agents={"Pods": {"mcp_servers": ["k8s"]}},
                         stage={"name": "act", "type": "action", "agents": [{"name": "Pods"}]})
    assert "an action stage runs action agents only; 'Pods' is not of type action" in problems


def test_an_alert_cannot_select_an_action_server(tmp_path):
    config = _load(tmp_path, {"Fixer": {"type": "action", "mcp_servers": ["k8s-write"]}})
    problems = validate_mcp_selection({"servers": [{"name": "k8s-write"}]}, config)
    assert problems == ["mcp.servers.0.name: 'k8s-write' is an action server; an alert cannot select it"]


def test_an_approval_may_outlive_the_session_timeout(tmp_path):
    """The session clock stops while a proposal waits for a person, so a long approval_ttl is no problem."""
    config = _load(tmp_path, {"Fixer": {"type": "action", "mcp_servers": ["k8s-write"]}},
                   actions={"enabled": True, "approval_ttl": "8h"})
    assert config.actions.approval_ttl > config.defaults.session_timeout
    assert not any("approval_ttl" in w for w in config.warnings(env={}))


def test_a_dry_run_is_declared_per_action_tool(tmp_path):
    servers = {"k8s-write": {**WRITE, "dry_run": {"resources_scale": {"argument": "dryRun"}}}}
    config = _load(tmp_path, {"Fixer": {"type": "action", "mcp_servers": ["k8s-write"]}}, servers=servers,
                   stage={"name": "act", "type": "action", "agents": [{"name": "Fixer"}]})
    how = config.mcp_servers["k8s-write"].dry_run_of("resources_scale")
    assert how is not None and (how.argument, how.value) == ("dryRun", "server")
    assert config.mcp_servers["k8s-write"].dry_run_of("pods_delete") is None


def test_a_dry_run_for_a_tool_outside_the_allow_list_is_a_load_error(tmp_path):
    servers = {"k8s-write": {**WRITE, "dry_run": {"pods_delete": {"argument": "dryRun"}}}}
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, {"Fixer": {"type": "action"}}, servers=servers)
    assert "dry_run names tools that are not in action_tools: pods_delete" in str(err.value)



def test_a_rate_limit_per_target_is_read_with_its_target_arguments(tmp_path):
    servers = {"k8s-write": {**WRITE, "target_arguments": ["namespace", "name"]}}
    config = _load(tmp_path, {"Fixer": {"type": "action", "mcp_servers": ["k8s-write"]}}, servers=servers,
                   actions={"rate_limit": {"max_per_target": 3, "window": "1h"}})
    assert (config.actions.rate_limit.max_per_target, config.actions.rate_limit.window) == (3, 3600.0)
    assert config.mcp_servers["k8s-write"].target_arguments == ["namespace", "name"]
    assert _load(tmp_path / "default", {"Fixer": {"type": "action"}}).actions.rate_limit is None


@pytest.mark.parametrize(("rate_limit", "servers", "message"), [
    ({"max_per_target": 0, "window": "1h"}, None, "max_per_target"),
    ({"max_per_target": 3}, None, "window"),
    (None, {"k8s": {**READ, "target_arguments": ["name"]}}, "target_arguments are only allowed with actions: true"),
    (None, {"k8s-write": {**WRITE, "target_arguments": []}}, "target_arguments"),
])
def test_a_bad_rate_limit_is_a_load_error(tmp_path, rate_limit, servers, message):
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, {"Fixer": {"type": "action"}}, servers=servers,
              actions={"rate_limit": rate_limit} if rate_limit else None)
    assert message in str(err.value)


def test_the_agent_never_sees_the_dry_run_argument_of_an_action_tool(tmp_path):
    """TARSy sets it for the preview only: an agent that could set it would have a dry run approved as the action."""
    from agents.llm.types import ToolDefinition
    from tarsy.config import set_config
    from tarsy.pipeline.actions.tools import ActionTools

    servers = {"k8s-write": {**WRITE, "dry_run": {"resources_scale": {"argument": "dryRun"}}}}
    set_config(_load(tmp_path, {"Fixer": {"type": "action", "mcp_servers": ["k8s-write"]}}, servers=servers,
                     stage={"name": "act", "type": "action", "agents": [{"name": "Fixer"}]}))
    scale = ToolDefinition(name="k8s-write.resources_scale", parameters={
        "type": "object", "required": ["name", "replicas", "dryRun"], "properties": {
            "name": {"type": "string"}, "replicas": {"type": "integer"}, "dryRun": {"type": "string"}}})

    class Listed:  # the MCP executor's listing, as the agent's tools are listed before any call
        def list_tools(self) -> list[ToolDefinition]:
            return [scale]

    [shown] = ActionTools(Listed(), execution=None, recorder=None, calls=None).list_tools()  # type: ignore[arg-type]
    assert "dryRun" not in shown.parameters["properties"] and "dryRun" not in shown.parameters["required"]
    assert {"name", "replicas", "_justification", "_verify"} <= set(shown.parameters["properties"])
