"""The configuration an eval run writes: fixture servers, reference chains, and chains bound to a provider."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agents.config import load_config
from agents.config.builtins import prometheus_server
from evals.fixtures import ScenarioError
from evals.runconfig import APPROVER, REFERENCE, state_file, write_run_config
from evals.scenario import SCENARIOS_DIR, load_scenario

NAME = "crashloop-missing-dependency"


def _chain(config, plan):
    """The chain a planned session runs on: the one the runner names, else its alert type's."""
    return config.chain(plan.chain_id or config.chain_for_alert_type(plan.alert_type))


def test_reference_run_gets_a_fixture_server_and_a_chain_copy_bound_to_its_script(tmp_path):
    scenario = load_scenario(SCENARIOS_DIR / NAME)
    plan = write_run_config(tmp_path, [scenario], concurrency=3)
    (p,) = plan.plans
    config = load_config(tmp_path)
    server = config.mcp_servers[p.servers["kubernetes-server"]]
    assert server.transport.args == ["-m", "evals.fixture_server", "--tools", str(scenario.tools_file),
                                     "--server", "kubernetes-server", "--idle-exit", "60"]
    # the deployment's settings for a server of that name: masking, instructions
    assert server.data_masking == config.mcp_servers["kubernetes-server"].data_masking
    assert server.instructions == config.mcp_servers["kubernetes-server"].instructions
    assert p.alert_type == "kubernetes"  # as a real alert: nothing of the scenario's name reaches the model
    assert p.chain_id == p.reference_chain_id == f"eval-reference-{NAME}"
    chain = _chain(config, p)
    assert chain.llm_provider == chain.executive_summary_provider == f"eval-reference-{NAME}"
    assert [a.name for a in chain.stages[0].agents] == ["KubernetesAgent"]
    assert config.chain_for_alert_type("kubernetes") == "kubernetes"  # the real chain is untouched
    script = (tmp_path / "scripts" / f"{NAME}.yaml").read_text()
    assert f"Action: {p.servers['kubernetes-server']}.pods_log" in script
    assert "Action: kubernetes-server." not in script
    assert config.queue.max_concurrent_sessions == 3


def test_a_named_provider_investigates_with_the_alerts_own_type_on_every_chain(tmp_path):
    plan = write_run_config(tmp_path, [load_scenario(SCENARIOS_DIR / NAME)], provider="openai-default")
    config = load_config(tmp_path, env={"OPENAI_API_KEY": "sk-test"})
    assert (plan.plans[0].alert_type, plan.plans[0].chain_id) == ("kubernetes", None)
    chain = config.chain("kubernetes")
    assert (chain.llm_provider, chain.chat.llm_provider, chain.stages[0].agents[0].llm_provider) == (
        "openai-default",) * 3
    assert config.default_provider == "openai-default"
    assert plan.as_reference().plans[0].chain_id == f"eval-reference-{NAME}"
    assert plan.as_reference().plans[0].alert_type == "kubernetes"


def test_unknown_provider_and_alert_type_are_refused(tmp_path):
    scenario = load_scenario(SCENARIOS_DIR / NAME)
    with pytest.raises(ScenarioError, match="--provider gpt-9: unknown LLM provider"):
        write_run_config(tmp_path / "a", [scenario], provider="gpt-9")
    odd = scenario.alert.model_copy(update={"alert_type": "pagerduty"})
    with pytest.raises(ScenarioError, match="no chain handles 'pagerduty'"):
        write_run_config(tmp_path / "b", [replace(scenario, alert=odd)], provider=REFERENCE)


def test_a_metrics_scenario_gets_a_prometheus_fixture_server_and_the_metrics_chain(tmp_path):
    scenario = load_scenario(SCENARIOS_DIR / "slo-burn-slow-payment-provider")
    (p,) = write_run_config(tmp_path, [scenario]).plans
    config = load_config(tmp_path, env={})
    server = config.mcp_servers[p.servers["prometheus-server"]]
    assert server.transport.args[-3:] == ["prometheus-server", "--idle-exit", "60"]
    # not configured in the deployment: the built-in Prometheus server's settings, not the Kubernetes server's
    assert server.instructions == prometheus_server().instructions
    assert server.instructions != config.mcp_servers["kubernetes-server"].instructions
    assert p.mcp_selection == {"servers": [{"name": p.servers["kubernetes-server"]},
                                           {"name": p.servers["prometheus-server"]}]}
    chain = _chain(config, p)
    assert (p.alert_type, p.chain_id) == ("metrics", "eval-reference-slo-burn-slow-payment-provider")
    assert [a.name for a in chain.stages[0].agents] == ["PrometheusAgent"]


ORCHESTRATED = "orchestrated-cpu-limit-cut-cart"


@pytest.mark.parametrize("provider", [REFERENCE, "openai-default"])
def test_an_orchestrated_scenario_runs_on_an_orchestrate_stage_giving_each_agent_its_kind_of_server(
        tmp_path, provider):
    plan = write_run_config(tmp_path, [load_scenario(SCENARIOS_DIR / ORCHESTRATED)], provider=provider)
    config = load_config(tmp_path, env={"OPENAI_API_KEY": "sk-test"})
    (p,) = plan.plans
    bound = f"eval-reference-{ORCHESTRATED}" if provider == REFERENCE else provider
    assert p.alert_type == "metrics"
    assert p.chain_id == (p.reference_chain_id if provider == REFERENCE else f"eval-orchestrated-{ORCHESTRATED}")
    assert p.mcp_selection is None  # the stage gives each agent its servers
    (stage,) = _chain(config, p).stages
    assert stage.orchestrate
    assert [(a.name, a.mcp_servers, a.llm_provider) for a in stage.agents] == [
        ("KubernetesAgent", [p.servers["kubernetes-server"]], bound),
        ("PrometheusAgent", [p.servers["prometheus-server"]], bound)]
    assert config.chain_for_alert_type("metrics") == "metrics"  # the real chain is untouched


def test_an_action_scenario_runs_its_investigation_read_only_then_an_action_stage_on_a_write_mode_twin(tmp_path):
    scenario = load_scenario(SCENARIOS_DIR / "action-scale-zero-after-rollout")
    plan = write_run_config(tmp_path, [scenario], provider="demo")
    (p,) = plan.plans
    config = load_config(tmp_path)
    read, write = p.servers["kubernetes-server"], p.write_servers["kubernetes-server"]
    assert not config.mcp_servers[read].actions and "--write" not in config.mcp_servers[read].transport.args
    assert config.mcp_servers[write].actions and "resources_scale" in config.mcp_servers[write].action_tools
    assert config.mcp_servers[write].transport.args[-3:] == ["--state", str(state_file(scenario)), "--write"]
    assert p.mcp_selection is None  # a selection would replace the action agent's server
    for chain_id in (p.chain_id, p.reference_chain_id):
        stages = config.chain(chain_id).stages
        assert [(s.type, [(a.name, a.mcp_servers) for a in s.agents]) for s in stages] == [
            ("investigation", [("KubernetesAgent", [read])]), ("action", [("Remediator", [write])])]
    assert config.agents["Remediator"].type == "action"
    assert config.actions.enabled and APPROVER in config.actions.approvers
    script = (tmp_path / "scripts" / f"{scenario.name}.yaml").read_text()
    assert f"Action: {write}.resources_scale" in script and f'"tool": "{write}.resources_get"' in script
    assert f"Action: {read}.resources_get" in script
