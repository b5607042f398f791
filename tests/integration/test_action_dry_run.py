"""Server-side dry runs of proposed actions, on a real worker against the write-mode MCP test server: a tool with
`dry_run` configured runs once as a dry run when proposed (recorded like every call, nothing changed) and the diff
is stored on the proposal; a dry run that fails is stored as failed and the proposal stands; a tool without dry-run
support says so."""

from __future__ import annotations

import sys

import pytest
from rest_framework.test import APIClient

from tarsy.models import ActionProposal, AgentExecution, MCPInteraction, TimelineEvent
from tarsy.services.intake.alerts import session_submit
from tests.fakes.mcp_servers.deployments_file_server import read_state, write_state
from tests.integration.test_actions import SERVER
from tests.support.processes import wait_for

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _propose(tool: str, name: str, **arguments) -> dict:
    target = {"namespace": "shop", "name": name}
    return {"name": f"cluster.{tool}", "arguments": {
        **target, **arguments, "_justification": "api has 1 of 3 replicas [E1]", "_expected_effect": "3 replicas",
        "_verify": {"tool": "cluster.resources_get", "arguments": target, "expect": "readyReplicas: 3"}}}


@pytest.mark.timeout(180)
def test_a_proposal_runs_its_dry_run_once_changes_nothing_and_keeps_the_diff(scripted_config, worker, tmp_path):
    state = tmp_path / "cluster.json"
    write_state(state, {"shop/api": {"replicas": 1, "max_ready": None}})
    scripted_config({"Fixer": [
        {"tool_calls": [{"name": "cluster.resources_get", "arguments": {"namespace": "shop", "name": "api"}}]},
        {"tool_calls": [_propose("resources_scale", "api", replicas=3), _propose("resources_scale", "gone", replicas=2),
                        _propose("rollout_restart", "api"), _propose("resources_scale", "api", replicas=5,
                                                                     dryRun="none")]},
        {"text": "waiting"}], "executive_summary": ["summary"]}, tarsy={
        "actions": {"enabled": True, "approvers": ["sre-oncall"], "max_pending_per_session": 4},
        "mcp_servers": {"cluster": {
            "transport": {"type": "stdio", "command": sys.executable, "args": [SERVER, str(state)]},
            "actions": True, "action_tools": ["resources_scale", "rollout_restart"],
            "dry_run": {"resources_scale": {"argument": "dryRun", "value": "server"}}}},
        "agents": {"Fixer": {"type": "action", "iteration_strategy": "native-thinking", "mcp_servers": ["cluster"]}},
        "agent_chains": {"repair": {"alert_types": ["repair"], "stages": [
            {"name": "remediate", "type": "action", "agents": [{"name": "Fixer"}]}]}},
    })
    proc = worker(concurrency=1)
    session = session_submit(alert_type="repair", data={"deployment": "shop/api"})

    def parked() -> AgentExecution | None:
        execution = AgentExecution.objects.filter(session=session, status="waiting").first()
        return execution if execution and ActionProposal.objects.filter(execution=execution).count() == 3 else None

    execution = wait_for(parked, timeout=90, message=f"three proposals; worker log:\n{proc.log()[-3000:]}")
    scale, missing, restart = ActionProposal.objects.filter(execution=execution).order_by("created_at")

    assert (scale.dry_run_status, scale.status) == ("ran", "pending")
    assert "-replicas: 1\n+replicas: 3" in scale.dry_run and "deployment.apps/api (dry run: server)" in scale.dry_run
    assert scale.arguments == {"namespace": "shop", "name": "api", "replicas": 3}  # what runs has no dryRun
    assert read_state(state) == {"shop/api": {"replicas": 1, "max_ready": None}}  # the dry run changed nothing
    assert (missing.dry_run_status, missing.status) == ("failed", "pending")  # shown, not blocking
    assert "deployments.apps 'gone' not found" in missing.dry_run
    assert (restart.dry_run_status, restart.dry_run) == ("unsupported", "")

    dry_runs = MCPInteraction.objects.filter(execution=execution, tool="resources_scale",
                                             arguments__dryRun="server").order_by("created_at")
    assert [c.arguments["name"] for c in dry_runs] == ["api", "gone"]  # through the MCP path, recorded, once each
    told = TimelineEvent.objects.get(execution=execution, event_type="tool_result",
                                     metadata__tool_name="rollout_restart")
    assert "Proposed" in told.content and "No dry-run for this tool" in told.content
    refused = TimelineEvent.objects.get(execution=execution, event_type="tool_result", metadata__is_error=True,
                                        content__contains="dry-run argument")
    assert "'dryRun' is the dry-run argument" in refused.content

    shown = APIClient(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/actions/{scale.id}").json()
    assert shown["dry_run_status"] == "ran" and "+replicas: 3" in shown["dry_run"]


def _misnamed_dry_run_config(scripted_config, state, argument: str) -> None:
    scripted_config({"Fixer": [
        {"tool_calls": [_propose("resources_scale", "api", replicas=0)]}, {"text": "waiting"}],
        "executive_summary": ["summary"]}, tarsy={
        "actions": {"enabled": True, "approvers": ["sre-oncall"]},
        "mcp_servers": {"cluster": {
            "transport": {"type": "stdio", "command": sys.executable, "args": [SERVER, str(state)]},
            "actions": True, "action_tools": ["resources_scale"],
            "dry_run": {"resources_scale": {"argument": argument, "value": "server"}}}},
        "agents": {"Fixer": {"type": "action", "iteration_strategy": "native-thinking", "mcp_servers": ["cluster"]}},
        "agent_chains": {"repair": {"alert_types": ["repair"], "stages": [
            {"name": "remediate", "type": "action", "agents": [{"name": "Fixer"}]}]}},
    })


@pytest.mark.timeout(180)
def test_a_dry_run_argument_the_tool_does_not_declare_never_makes_the_real_call(scripted_config, worker, tmp_path):
    """The tool's parameter is `dryRun`; the config says `dry_run`. The server ignores an unknown argument, so a
    "dry run" with it would scale to 0 before anyone approved: it must not run at all."""
    state = tmp_path / "cluster.json"
    write_state(state, {"shop/api": {"replicas": 3, "max_ready": None}})
    _misnamed_dry_run_config(scripted_config, state, "dry_run")
    proc = worker(concurrency=1)
    session = session_submit(alert_type="repair", data={"deployment": "shop/api"})

    proposal = wait_for(lambda: ActionProposal.objects.filter(session=session).first(), timeout=90,
                        message=f"a proposal; worker log:\n{proc.log()[-3000:]}")
    wait_for(lambda: AgentExecution.objects.filter(session=session, status="waiting").exists(), timeout=60,
             message="the execution parks")

    assert read_state(state)["shop/api"]["replicas"] == 3  # nothing ran before approval
    assert not MCPInteraction.objects.filter(session=session, arguments__has_key="dry_run").exists()  # never sent
    assert (proposal.dry_run_status, proposal.dry_run, proposal.status) == ("unsupported", "", "pending")
    why = TimelineEvent.objects.get(session=session, event_type="error", metadata__source="dry_run")
    assert "'dry_run' is not a parameter of cluster.resources_scale" in why.content and "dryRun" in why.content
