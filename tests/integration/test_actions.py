"""Approved actions end to end, on real Celery workers, Redis and PostgreSQL, driven by the scripted provider against
a write-mode MCP server whose state is a file: a proposal parks the execution (no task in flight), survives a
worker restart, is approved through the API by an approver only, runs, is verified, and lands in the final
analysis; a verification that fails yields a rollback proposal; with actions disabled nothing is proposed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tarsy.celery import app
from tarsy.models import ActionProposal, AgentExecution, LLMInteraction, MCPInteraction, TimelineEvent
from tarsy.pipeline.actions.decisions import expired_wake
from tarsy.pipeline.sweeper import sweep_once
from tarsy.services.intake.alerts import session_submit
from tests.fakes.mcp_servers.deployments_file_server import read_state, write_state
from tests.support.configdir import PROXY_ON_LOOPBACK
from tests.support.processes import wait_for
from tests.support.sessions import assert_no_duplicates, wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers" / "deployments_file_server.py")
TARGET = {"namespace": "shop", "name": "api"}


def _get() -> dict:
    return {"tool_calls": [{"name": "cluster.resources_get", "arguments": TARGET}]}


def _scale(replicas: int, expect: str) -> dict:
    return {"tool_calls": [{"name": "cluster.resources_scale", "arguments": {
        **TARGET, "replicas": replicas, "_justification": "api has 1 of 3 replicas and drops requests {evidence}",
        "_expected_effect": f"api runs {replicas} ready replicas",
        "_verify": {"tool": "cluster.resources_get", "arguments": TARGET, "expect": expect}}}]}


def _setup(scripted_config, tmp_path, script: dict, *, max_ready: int | None = None, enabled: bool = True,
           ttl: str = "1h") -> Path:
    state = tmp_path / "cluster.json"
    write_state(state, {"shop/api": {"replicas": 1, "max_ready": max_ready}})
    script.setdefault("executive_summary", ["summary"])
    scripted_config(script, tarsy={
        "system": PROXY_ON_LOOPBACK,  # approvers are people the proxy names and groups
        "actions": {"enabled": enabled, "approvers": ["sre-oncall"], "verify_attempts": 2, "verify_interval": "1s",
                    "approval_ttl": ttl},
        "mcp_servers": {"cluster": {
            "transport": {"type": "stdio", "command": sys.executable, "args": [SERVER, str(state)]},
            "actions": True, "action_tools": ["resources_scale"]}},
        "agents": {"Fixer": {"type": "action", "iteration_strategy": "native-thinking",
                             "mcp_servers": ["cluster"]}},
        "agent_chains": {"repair": {"alert_types": ["repair"], "stages": [
            {"name": "remediate", "type": "action", "agents": [{"name": "Fixer"}]}]}},
    })
    return state


def _in_flight() -> str:
    """The arguments of every task the workers hold (running or prefetched), as the workers report them (asked
    again until one answers: a busy machine may miss a second's window)."""

    def held() -> str | None:
        inspect = app.control.inspect(timeout=2.0)
        active, reserved = inspect.active(), inspect.reserved()
        if active is None or reserved is None:
            return None
        return " " + " ".join(str(t.get("args")) for tasks in [*active.values(), *reserved.values()] for t in tasks)

    return wait_for(held, timeout=30, message="a worker to answer the inspection")


def _parked_on(session, count: int) -> tuple[AgentExecution, ActionProposal]:
    def parked() -> AgentExecution | None:
        execution = AgentExecution.objects.filter(session=session).first()
        waiting = execution is not None and execution.status == "waiting"
        return execution if waiting and ActionProposal.objects.filter(execution=execution).count() == count else None

    execution = wait_for(parked, timeout=60, message=f"the execution to park on proposal {count}")
    proposal = ActionProposal.objects.filter(execution=execution).order_by("created_at").last()
    assert proposal is not None
    return execution, proposal


def _decide(proposal: ActionProposal, verb: str, user: str, groups: str, comment: str = ""):
    client = APIClient(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_USER=user, HTTP_X_FORWARDED_GROUPS=groups)
    return client.post(f"/api/v1/actions/{proposal.id}/{verb}", {"comment": comment}, format="json")


@pytest.mark.timeout(240)
def test_a_proposal_parks_survives_a_restart_is_approved_runs_and_is_verified(scripted_config, worker, tmp_path):
    state = _setup(scripted_config, tmp_path, {"Fixer": [
        _get(), _scale(3, "readyReplicas: 3"), {"text": "api was short of replicas; scaled to 3, verified {evidence}."},
    ]})
    first = worker(concurrency=2)
    session = session_submit(alert_type="repair", data={"deployment": "shop/api"})
    execution, proposal = _parked_on(session, 1)
    assert proposal.status == "pending" and proposal.arguments == {**TARGET, "replicas": 3}
    assert "drops requests" in proposal.justification and proposal.verify_tool == "cluster.resources_get"
    assert execution.lease_expires_at is None
    assert read_state(state)["shop/api"]["replicas"] == 1  # proposed, not run
    assert str(execution.id) not in _in_flight()

    first.stop()  # a restart while it waits changes nothing
    second = worker(concurrency=2)
    wait_for(lambda: str(execution.id) not in _in_flight(), timeout=30, message="the new worker to answer")
    assert sweep_once()["orchestrators_woken"] == 0  # the sweeper's net leaves a proposal's wait alone
    execution.refresh_from_db()
    proposal.refresh_from_db()
    assert (execution.status, proposal.status) == ("waiting", "pending")

    listed = APIClient(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_USER="mallory").get(
        "/api/v1/actions?status=pending").json()
    assert [p["id"] for p in listed] == [str(proposal.id)]
    refused = _decide(proposal, "approve", "mallory", "dev")
    assert refused.status_code == 403, refused.content
    approved = _decide(proposal, "approve", "alice", "sre-oncall", "go ahead")
    assert approved.status_code == 200, approved.content
    assert _decide(proposal, "approve", "alice", "sre-oncall").status_code == 409  # decided once

    (done,) = wait_terminal([session.id], 120, second)
    assert done.status == "completed", (done.error_message, second.log()[-3000:])
    proposal.refresh_from_db()
    assert (proposal.status, proposal.outcome, proposal.decided_by, proposal.comment) == \
        ("executed", "verified", "alice", "go ahead")
    assert "readyReplicas: 3" in proposal.evidence
    assert read_state(state)["shop/api"]["replicas"] == 3
    calls = MCPInteraction.objects.filter(execution=execution, tool="resources_scale").order_by("created_at")
    assert [c.result.split(";")[0] for c in calls] == ["Proposed", "deployment.apps/api scaled to 3"]
    assert calls[1].arguments == {**TARGET, "replicas": 3}  # run once, as approved
    assert "### Actions" in done.final_analysis and "approved by alice, ran, verified" in done.final_analysis
    told = LLMInteraction.objects.get(session=done, iteration=3, interaction_type="iteration")
    assert any("Outcome: verified" in m["content"] for m in told.conversation)  # the agent read the outcome
    transitions = list(TimelineEvent.objects.filter(session=done, event_type="action").order_by("id")
                       .values_list("metadata__transition", flat=True))
    assert transitions == ["proposed", "approved", "executed"]
    assert_no_duplicates(done.id)


@pytest.mark.timeout(240)
def test_a_verification_that_fails_leads_to_a_rollback_proposal_then_a_rejection(scripted_config, worker, tmp_path):
    state = _setup(scripted_config, tmp_path, {"Fixer": [
        _get(), _scale(3, "readyReplicas: 3"), _scale(1, "replicas: 1"),
        {"text": "Scaling did not help (quota); rollback rejected, left at 3 replicas {evidence}."},
    ]}, max_ready=1)
    proc = worker(concurrency=2)
    session = session_submit(alert_type="repair", data={"deployment": "shop/api"})
    _, first = _parked_on(session, 1)
    assert _decide(first, "approve", "alice", "sre-oncall").status_code == 200
    execution, rollback = _parked_on(session, 2)
    first.refresh_from_db()
    assert (first.status, first.outcome) == ("executed", "not_verified")
    assert "readyReplicas: 1" in first.evidence
    assert rollback.status == "pending" and rollback.arguments == {**TARGET, "replicas": 1}
    assert str(execution.id) not in _in_flight()
    assert _decide(rollback, "reject", "alice", "sre-oncall", "keep it").status_code == 200

    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    assert read_state(state)["shop/api"]["replicas"] == 3  # the rejected rollback never ran
    assert "ran, not_verified" in done.final_analysis and "rejected by alice" in done.final_analysis


@pytest.mark.timeout(180)
def test_with_actions_disabled_no_proposal_is_created(scripted_config, worker, tmp_path):
    state = _setup(scripted_config, tmp_path, {"Fixer": [
        _scale(3, "readyReplicas: 3"), {"text": "Actions are off: scale api to 3 by hand."}]}, enabled=False)
    proc = worker(concurrency=2)
    session = session_submit(alert_type="repair", data={"deployment": "shop/api"})
    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    assert not ActionProposal.objects.exists()
    refusal = TimelineEvent.objects.get(session=done, event_type="tool_result", metadata__tool_name="resources_scale")
    assert "actions are disabled" in refusal.content and refusal.metadata["is_error"] is True
    assert read_state(state)["shop/api"]["replicas"] == 1


@pytest.mark.timeout(180)
def test_an_expired_proposal_cannot_be_approved_and_the_agent_concludes_without_acting(scripted_config, worker,
                                                                                       tmp_path):
    state = _setup(scripted_config, tmp_path, {"Fixer": [
        _scale(3, "readyReplicas: 3"), {"text": "Nobody approved in time; nothing was changed."}]}, ttl="2s")
    proc = worker(concurrency=2)
    session = session_submit(alert_type="repair", data={"deployment": "shop/api"})
    _, proposal = _parked_on(session, 1)
    wait_for(lambda: timezone.now() > proposal.expires_at, timeout=10, message="the approval to expire")
    late = _decide(proposal, "approve", "alice", "sre-oncall")
    assert late.status_code == 409 and "expired" in late.json()["error"], late.content
    assert expired_wake() == 1  # the sweeper's pass
    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    proposal.refresh_from_db()
    assert proposal.status == "expired" and read_state(state)["shop/api"]["replicas"] == 1
    told = LLMInteraction.objects.get(session=done, iteration=2, interaction_type="iteration")
    assert any("EXPIRED" in m["content"] and "Conclude without acting" in m["content"] for m in told.conversation)


def test_an_alert_selecting_an_action_server_is_refused(scripted_config, tmp_path):
    _setup(scripted_config, tmp_path, {"Fixer": [{"text": "never runs"}]})
    response = APIClient(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_USER="alice").post("/api/v1/alerts", {
        "alert_type": "repair", "data": {"deployment": "shop/api"}, "mcp": {"servers": [{"name": "cluster"}]}},
        format="json")
    assert response.status_code == 400, response.content
    assert "'cluster' is an action server" in response.content.decode()
