"""Configuration: loading, interpolation, validation messages, the check_config command, resolution."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agents.config import ConfigError, load_config
from agents.config.schema import parse_duration
from agents.context import resolve_agent

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "deploy" / "config"


def _write(directory: Path, tarsy: dict | None = None, providers: dict | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    if tarsy is not None:
        (directory / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    if providers is not None:
        (directory / "llm-providers.yaml").write_text(yaml.safe_dump({"llm_providers": providers}))
    return directory


def _check_config(directory: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "TARSY_CONFIG_DIR")}
    return subprocess.run([sys.executable, "manage.py", "check_config", "--config-dir", str(directory)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)


def test_builtins_work_without_any_file():
    config = load_config(None, env={})
    assert config.chain_for_alert_type("kubernetes") == "kubernetes"
    assert config.default_provider == "demo"
    assert config.agents["KubernetesAgent"].mcp_servers == ["demo-kubernetes"]


def test_builtin_provider_follows_the_configured_api_key():
    assert load_config(None, env={"GOOGLE_API_KEY": "x"}).default_provider == "google-default"
    assert load_config(None, env={"OPENAI_API_KEY": "x"}).default_provider == "openai-default"
    assert load_config(None, env={"KUBECONFIG": "/k"}).agents["KubernetesAgent"].mcp_servers == ["kubernetes-server"]


def test_metric_alerts_get_the_prometheus_agent_and_its_server_only_where_prometheus_is_configured():
    without = load_config(None, env={})
    assert without.chain_for_alert_type("metrics") == "metrics"
    assert without.chain("metrics").stages[0].agents[0].name == "PrometheusAgent"
    assert "prometheus-server" not in without.mcp_servers  # it could not start: no server shown as down
    assert without.agents["PrometheusAgent"].mcp_servers == ["demo-kubernetes", "demo-metrics"]  # the demo's pair
    real_cluster = load_config(None, env={"KUBECONFIG": "/k"})  # no demo metrics about pods it does not have
    assert real_cluster.agents["PrometheusAgent"].mcp_servers == ["kubernetes-server"]
    with_url = load_config(None, env={"PROMETHEUS_URL": "http://prometheus:9090", "KUBECONFIG": "/k"})
    assert with_url.agents["PrometheusAgent"].mcp_servers == ["kubernetes-server", "prometheus-server"]
    transport = with_url.mcp_servers["prometheus-server"].transport
    assert "PROMETHEUS_URL" in transport.env_passthrough and transport.args[-1].startswith("ghcr.io/pab1it0/")


def test_triage_alerts_get_an_orchestrator_over_the_kubernetes_and_metrics_agents():
    config = load_config(None, env={})
    chain = config.chain(config.chain_for_alert_type("triage"))
    (orchestrator,) = chain.stages[0].agents
    agent = config.agents[orchestrator.name]
    assert agent.sub_agents == ["KubernetesAgent", "PrometheusAgent"]
    assert agent.iteration_strategy == "native-thinking"  # one reply dispatches both


def test_shipped_examples_pass_check_config():
    result = _check_config(EXAMPLES)
    assert result.returncode == 0, result.stderr
    assert "Configuration OK" in result.stdout


def test_unknown_agent_in_a_chain_is_reported_with_file_and_key_path(tmp_path):
    copy = tmp_path / "config"
    shutil.copytree(EXAMPLES, copy)
    text = (copy / "tarsy.yaml.example").read_text().replace("- name: KubernetesAgent\n        replicas",
                                                             "- name: NoSuchAgent\n        replicas")
    (copy / "tarsy.yaml.example").write_text(text)
    result = _check_config(copy)
    assert result.returncode == 1
    assert ("tarsy.yaml.example: agent_chains.kubernetes-deep.stages.0.agents.0.name: unknown agent 'NoSuchAgent'"
            in result.stderr), result.stderr


def test_every_problem_is_listed_at_once(tmp_path):
    directory = _write(tmp_path, tarsy={
        "defaults": {"max_iterations": 0, "iteration_timeout": "soon"},
        "agent_chains": {"x": {"alert_types": ["x"], "stages": [{"name": "s", "agents": [{"name": "Ghost"}]}]}},
        "surprise": 1,
    }, providers={"p": {"type": "openai"}})
    with pytest.raises(ConfigError) as err:
        load_config(directory, env={})
    problems = "\n".join(err.value.problems)
    assert "tarsy.yaml: defaults.max_iterations:" in problems
    assert "tarsy.yaml: defaults.iteration_timeout: invalid duration 'soon'" in problems
    assert "tarsy.yaml: surprise: Extra inputs are not permitted" in problems
    assert "llm-providers.yaml: llm_providers.p: model is required" in problems


def test_cross_references_name_the_unknown_target(tmp_path):
    directory = _write(tmp_path, tarsy={
        "agents": {"A": {"mcp_servers": ["nope"], "llm_provider": "ghost"}},
        "agent_chains": {"x": {"alert_types": ["x"], "stages": [{"name": "s", "agents": [{"name": "A"}]}]}},
    })
    with pytest.raises(ConfigError) as err:
        load_config(directory, env={})
    problems = err.value.problems
    assert any("tarsy.yaml: agents.A.mcp_servers.0: unknown MCP server 'nope'" in p for p in problems)
    assert any("tarsy.yaml: agents.A.llm_provider: unknown llm provider 'ghost'" in p for p in problems)


def test_environment_interpolation_and_dotenv(tmp_path):
    directory = tmp_path
    (directory / "tarsy.yaml").write_text("defaults:\n  runbook: '{{.RUNBOOK_TEXT}}'\n  alert_type: '{{ .KIND }}'\n"
                                          "# comments may mention {{.UNSET}}\n")
    (directory / ".env").write_text("KIND=from-dotenv\n")
    config = load_config(directory, env={"RUNBOOK_TEXT": "check the pods", "KIND": "from-env"})
    assert config.defaults.runbook == "check the pods"
    assert config.defaults.alert_type == "from-env"  # the real environment wins over .env
    assert load_config(directory, env={"RUNBOOK_TEXT": "x"}).defaults.alert_type == "from-dotenv"
    with pytest.raises(ConfigError) as err:
        load_config(directory, env={})
    assert err.value.problems == ["tarsy.yaml: line 2: environment variable RUNBOOK_TEXT is not set"]


def test_yaml_entry_replaces_the_builtin_with_the_same_name(tmp_path):
    directory = _write(tmp_path, tarsy={"agents": {"KubernetesAgent": {"mcp_servers": [], "max_iterations": 3}}})
    config = load_config(directory, env={})
    assert config.agents["KubernetesAgent"].mcp_servers == []
    assert config.agents["KubernetesAgent"].custom_instructions == ""


@pytest.mark.parametrize("value,seconds", [(90, 90.0), ("90", 90.0), ("90s", 90.0), ("15m", 900.0), ("1h", 3600.0),
                                           ("500ms", 0.5)])
def test_durations(value, seconds):
    assert parse_duration(value) == seconds


def test_resolution_hierarchy_later_levels_win(tmp_path):
    directory = _write(tmp_path, tarsy={
        "defaults": {"max_iterations": 20, "iteration_timeout": "2m"},
        "agents": {"A": {"max_iterations": 10, "mcp_servers": ["demo-kubernetes"], "iteration_strategy": "react"}},
        "agent_chains": {"c": {
            "alert_types": ["c"], "max_iterations": 8, "llm_provider": "demo",
            "stages": [{"name": "s", "iteration_timeout": "30s",
                        "agents": [{"name": "A", "max_iterations": 4, "iteration_strategy": "native-thinking"}]}],
        }},
    }, providers={"g": {"type": "google", "model": "gemini-2.5-flash"}})
    config = load_config(directory, env={})
    resolved = resolve_agent(config, agent_name="A", chain_id="c", stage_index=0, stage_agent_index=0)
    assert resolved.max_iterations == 4
    assert resolved.iteration_timeout == 30.0
    assert resolved.iteration_strategy == "native-thinking"
    assert resolved.llm_provider_name == "demo"
    assert resolved.mcp_servers == ("demo-kubernetes",)
    selected = resolve_agent(config, agent_name="A", chain_id="c", stage_index=0, stage_agent_index=0,
                             provider_override="g",
                             mcp_selection={"servers": [{"name": "kubernetes-server", "tools": ["pods_list"]}]})
    assert selected.mcp_servers == ("kubernetes-server",)
    assert selected.tool_filter == {"kubernetes-server": ("pods_list",)}
    assert selected.llm_backend == "google-native"


def test_check_config_says_when_it_read_the_examples(tmp_path):
    result = _check_config(EXAMPLES)
    assert "files read: tarsy.yaml.example, llm-providers.yaml.example" in result.stdout
    assert "checked in place of the missing tarsy.yaml, llm-providers.yaml" in result.stdout
    real = _write(tmp_path / "real", tarsy={}, providers={})
    assert "note:" not in _check_config(real).stdout


def test_an_unknown_provider_is_reported_in_the_same_pass_as_a_schema_error(tmp_path):
    directory = _write(tmp_path, tarsy={"defaults": {"llm_provider": "no-such-provider", "iteration_timeout": "soon"},
                                        "agents": {"Helper": {"llm_provider": "gemini-typo", "max_iterations": 0}}})
    with pytest.raises(ConfigError) as info:
        load_config(directory, env={})
    text = "\n".join(info.value.problems)
    assert "defaults.iteration_timeout: invalid duration 'soon'" in text
    assert "agents.Helper.max_iterations:" in text
    assert "defaults.llm_provider: unknown llm provider 'no-such-provider'" in text
    assert "agents.Helper.llm_provider: unknown llm provider 'gemini-typo'" in text


def test_a_stage_agent_given_as_text_gets_a_plain_message(tmp_path):
    directory = _write(tmp_path, tarsy={"agent_chains": {"web": {"alert_types": ["web"], "stages": [
        {"name": "analysis", "agents": ["KubernetesAgent"]}]}}})
    with pytest.raises(ConfigError) as info:
        load_config(directory, env={})
    (problem,) = [p for p in info.value.problems if "stages.0.agents.0" in p]
    assert problem == ("tarsy.yaml: agent_chains.web.stages.0.agents.0: expected a mapping of `key: value` entries, "
                       "got text")
    assert "instance of" not in "\n".join(info.value.problems)


def test_check_config_lists_only_the_files_it_read(tmp_path):
    directory = tmp_path / "config"
    directory.mkdir()
    (directory / "tarsy.yaml").write_text("defaults: {max_iterations: 5}\n")
    result = _check_config(directory)
    assert result.returncode == 0, result.stderr
    read = next(line for line in result.stdout.splitlines() if "files read:" in line)
    assert read.strip() == "files read: tarsy.yaml"
    assert "not present (built-ins used): llm-providers.yaml" in result.stdout
