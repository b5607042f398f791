"""A configured dry run is used only when the tool's input schema declares its argument with a value its type
admits (agents.mcp.dry_run), checked on the schema a real MCP server lists and by `check_config`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agents.config.schema import MCPServerConfig
from agents.mcp.dry_run import dry_run_problems
from agents.mcp.pool import MCPPool

ROOT = Path(__file__).resolve().parents[3]
SERVER = str(ROOT / "tests" / "fakes" / "mcp_servers" / "deployments_file_server.py")


def _server(tmp_path: Path, dry_run: dict) -> dict:
    state = tmp_path / "cluster.json"
    state.write_text('{"shop/api": {"replicas": 3, "max_ready": null}}')
    return {"transport": {"type": "stdio", "command": sys.executable, "args": [SERVER, str(state)]},
            "actions": True, "action_tools": ["resources_scale", "rollout_restart"], "dry_run": dry_run}


@pytest.fixture(scope="module")
def listed(tmp_path_factory):
    """The tools the write-mode test server really lists (their input schemas as the MCP SDK derives them)."""
    cfg = MCPServerConfig.model_validate(_server(tmp_path_factory.mktemp("listed"), {}))
    pool = MCPPool()
    try:
        yield pool.list_tools("cluster", cfg, timeout=30)
    finally:
        pool.shutdown()


@pytest.mark.parametrize("dry_run, problem", [
    ({"argument": "dry_run"}, "'dry_run' is not a parameter of cluster.resources_scale"),  # the tool's is dryRun
    ({"argument": "dryRun", "value": True}, "value True is not accepted by the parameter 'dryRun'"),  # a string
])
def test_a_dry_run_the_schema_does_not_declare_is_reported(listed, tmp_path, dry_run, problem):
    cfg = MCPServerConfig.model_validate(_server(tmp_path, {"resources_scale": dry_run}))
    found = dry_run_problems("cluster", cfg, listed)
    assert list(found) == ["resources_scale"] and problem in found["resources_scale"]
    assert "dryRun" in found["resources_scale"]


def test_a_declared_dry_run_argument_is_trusted(listed, tmp_path):
    cfg = MCPServerConfig.model_validate(_server(tmp_path, {"resources_scale": {"argument": "dryRun"}}))
    assert dry_run_problems("cluster", cfg, listed) == {}


def test_a_dry_run_of_a_tool_the_server_does_not_list_is_reported(listed, tmp_path):
    cfg = MCPServerConfig.model_validate(_server(tmp_path, {"rollout_restart": {"argument": "dryRun"}}))
    assert "'dryRun' is not a parameter of cluster.rollout_restart" in \
        dry_run_problems("cluster", cfg, listed)["rollout_restart"]
    cfg.action_tools.append("scale_all")
    cfg.dry_run = {"scale_all": cfg.dry_run["rollout_restart"]}
    assert "which the server does not list" in dry_run_problems("cluster", cfg, listed)["scale_all"]


def _check_config(tmp_path: Path, server: dict, *flags: str) -> subprocess.CompletedProcess:
    tarsy = {"mcp_servers": {"cluster": server},
             "agents": {"Fixer": {"type": "action", "mcp_servers": ["cluster"]}},
             "agent_chains": {"repair": {"alert_types": ["repair"], "stages": [
                 {"name": "remediate", "type": "action", "agents": [{"name": "Fixer"}]}]}}}
    (tmp_path / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "TARSY_CONFIG_DIR")}
    return subprocess.run([sys.executable, "manage.py", "check_config", "--config-dir", str(tmp_path), *flags],
                          cwd=ROOT, capture_output=True, text=True, timeout=90, env=env)


def test_check_config_fails_on_a_dry_run_argument_the_server_does_not_declare(tmp_path):
    result = _check_config(tmp_path, _server(tmp_path, {"resources_scale": {"argument": "dry_run"}}))
    assert result.returncode == 1, result.stdout
    assert "tarsy.yaml: mcp_servers.cluster.dry_run.resources_scale: dry_run argument 'dry_run' is not a " \
           "parameter of cluster.resources_scale" in result.stderr
    assert "Configuration OK" not in result.stdout


def test_check_config_passes_a_declared_one_and_warns_when_it_cannot_reach_the_server(tmp_path):
    good = _check_config(tmp_path, _server(tmp_path, {"resources_scale": {"argument": "dryRun"}}))
    assert good.returncode == 0, good.stderr
    unreachable = {**_server(tmp_path, {"resources_scale": {"argument": "dry_run"}}),
                   "transport": {"type": "stdio", "command": str(tmp_path / "no-such-server")}}
    result = _check_config(tmp_path, unreachable)
    assert result.returncode == 0, result.stderr
    assert "warning: mcp_servers.cluster.dry_run not checked: cannot list the server's tools" in result.stdout
    assert _check_config(tmp_path, _server(tmp_path, {"resources_scale": {"argument": "dry_run"}}),
                         "--offline").returncode == 0
