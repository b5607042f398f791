"""Guards of approved actions, end to end on real Celery workers, Redis and PostgreSQL with the write-mode MCP
server whose state is a file: no action on a session whose alert resolved (withdrawn, refused, never run); a rate
limit per target; the session clock stopped while a proposal waits for a person; an action its execution never
finished recorded as of unknown effect; every transition on /metrics; the action stage typed `action`."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tarsy.config import DEFAULT_AUTHOR
from tarsy.models import ActionProposal, AgentExecution, AlertSession, Event, LLMInteraction, Stage, TimelineEvent
from tarsy.pipeline.sweeper import sweep_once
from tarsy.services.intake.alerts import session_submit
from tarsy.streaming.publisher import event_message
from tests.fakes.mcp_servers.deployments_file_server import read_state, write_state
from tests.support.processes import wait_for
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers" / "deployments_file_server.py")
TARGET = {"namespace": "shop", "name": "api"}
FINGERPRINT = "5e1f0a9c7b3d2e41"  # the Alertmanager alert behind the session


def _get() -> dict:
    return {"tool_calls": [{"name": "cluster.resources_get", "arguments": TARGET}]}


def _scale(replicas: int, expect: str = "readyReplicas: 3") -> dict:
    return {"tool_calls": [{"name": "cluster.resources_scale", "arguments": {
        **TARGET, "replicas": replicas, "_justification": "api has 1 of 3 replicas and drops requests {evidence}",
        "_expected_effect": f"api runs {replicas} ready replicas",
        "_verify": {"tool": "cluster.resources_get", "arguments": TARGET, "expect": expect}}}]}


def _setup(scripted_config, tmp_path, script: dict, *, actions: dict | None = None, timeout: str = "15m",
           scale_delay_s: float = 0, latency_ms: int = 0) -> Path:
    state = tmp_path / "cluster.json"
    write_state(state, {"shop/api": {"replicas": 1, "max_ready": None, "scale_delay_s": scale_delay_s}})
    script.setdefault("executive_summary", ["summary"])
    scripted_config(script, latency_ms=latency_ms, tarsy={
        "defaults": {"session_timeout": timeout},
        "actions": {"enabled": True, "approvers": ["sre-oncall", DEFAULT_AUTHOR], "verify_attempts": 2,
                    "verify_interval": "1s", **(actions or {})},
        "mcp_servers": {"cluster": {
            "transport": {"type": "stdio", "command": sys.executable, "args": [SERVER, str(state)]},
            "actions": True, "action_tools": ["resources_scale"], "target_arguments": ["namespace", "name"]}},
        "agents": {"Fixer": {"type": "action", "iteration_strategy": "native-thinking", "mcp_servers": ["cluster"]}},
        "agent_chains": {"repair": {"alert_types": ["repair"], "stages": [
            {"name": "remediate", "type": "action", "agents": [{"name": "Fixer"}]}]}},
    })
    return state


def _submit() -> AlertSession:
    return session_submit(alert_type="repair", data={"deployment": "shop/api"}, author="alertmanager",
                          fingerprint=f"alertmanager:{FINGERPRINT}")


def _resolve():
    """Alertmanager says the session's alert is over (the webhook, as it sends it)."""
    body = {"version": "4", "status": "resolved", "receiver": "tarsy", "groupLabels": {}, "commonLabels": {},
            "commonAnnotations": {}, "externalURL": "http://alertmanager:9093", "alerts": [{
                "status": "resolved", "labels": {"alertname": "ApiShortOfReplicas", "namespace": "shop"},
                "annotations": {}, "startsAt": "2026-11-27T10:00:00Z", "endsAt": "2026-11-27T10:20:00Z",
                "fingerprint": FINGERPRINT}]}
    response = APIClient(REMOTE_ADDR="127.0.0.1").post("/api/v1/alerts/alertmanager", body, format="json")
    assert response.status_code == 202, response.content
    return response.json()["resolved"]


def _parked_on(session, count: int) -> tuple[AgentExecution, ActionProposal]:
    def parked() -> AgentExecution | None:
        execution = AgentExecution.objects.filter(session=session).first()
        waiting = execution is not None and execution.status == "waiting"
        return execution if waiting and ActionProposal.objects.filter(execution=execution).count() == count else None

    execution = wait_for(parked, timeout=60, message=f"the execution to park on proposal {count}")
    proposal = ActionProposal.objects.filter(execution=execution).order_by("created_at").last()
    assert proposal is not None
    return execution, proposal


def _decide(proposal: ActionProposal, verb: str = "approve"):
    """The local user (auth mode none), an approver here, decides."""
    client = APIClient(REMOTE_ADDR="127.0.0.1")
    return client.post(f"/api/v1/actions/{proposal.id}/{verb}", {"comment": ""}, format="json")


def _transitions(session_id) -> list[tuple[str, str | None]]:
    return list(TimelineEvent.objects.filter(session_id=session_id, event_type="action").order_by("id")
                .values_list("metadata__transition", "metadata__outcome"))


def _told(session_id, iteration: int) -> str:
    told = LLMInteraction.objects.get(session_id=session_id, iteration=iteration, interaction_type="iteration")
    return "\n".join(str(m["content"]) for m in told.conversation)


def _metrics() -> str:
    return APIClient(REMOTE_ADDR="127.0.0.1").get("/metrics").content.decode()


def _value(text: str, name: str, **labels: str) -> float:
    """A sample of the exposition text, whatever the order of its labels (0 when absent)."""
    for line in text.splitlines():
        head, _, value = line.rpartition(" ")
        if head.startswith(name + "{") and all(f'{k}="{v}"' in head for k, v in labels.items()):
            return float(value)
    return 0.0


# ---- the alert resolved ---------------------------------------------------------------------------------------

@pytest.mark.timeout(240)
def test_a_resolved_alert_withdraws_the_pending_action_and_the_agent_concludes_without_acting(scripted_config,
                                                                                             worker, tmp_path):
    state = _setup(scripted_config, tmp_path, {"Fixer": [
        _get(), _scale(3), {"text": "The alert resolved by itself; nothing was changed {evidence}."}]})
    proc = worker(concurrency=2)
    session = _submit()
    _, proposal = _parked_on(session, 1)
    before = _metrics()
    assert _value(before, "tarsy_action_proposals_pending", server="cluster", tool="resources_scale") == 1

    assert _resolve() == [{"fingerprint": f"alertmanager:{FINGERPRINT}", "session_id": str(session.id),
                           "action": "annotated"}]
    proposal.refresh_from_db()
    assert (proposal.status, proposal.reason) == ("withdrawn", "the alert resolved meanwhile")
    late = _decide(proposal)
    assert late.status_code == 409 and "withdrawn: the alert resolved meanwhile" in late.json()["error"], late.content

    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    assert read_state(state)["shop/api"]["replicas"] == 1  # never ran
    assert "WITHDRAWN: the alert resolved meanwhile" in _told(done.id, 3)
    assert "withdrawn: the alert resolved meanwhile" in done.final_analysis
    assert _transitions(done.id) == [("proposed", None), ("withdrawn", None)]
    after = _metrics()  # the withdrawal happened in this process (the webhook)

    def counted(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert counted("tarsy_action_proposals_total", server="cluster", tool="resources_scale",
                   transition="withdrawn", outcome="") == 1
    assert counted("tarsy_action_approval_wait_seconds_count", decision="withdrawn") == 1
    assert _value(after, "tarsy_action_proposals_pending", server="cluster", tool="resources_scale") == 0


@pytest.mark.timeout(240)
def test_an_approved_action_is_not_run_once_the_alert_resolved(scripted_config, worker, tmp_path):
    state = _setup(scripted_config, tmp_path, {"Fixer": [
        _scale(3), {"text": "The alert resolved before the scale ran; nothing was changed."}]})
    first = worker(concurrency=2)
    session = _submit()
    _, proposal = _parked_on(session, 1)
    first.stop()  # nobody runs the approved action before the resolution arrives
    assert _decide(proposal).status_code == 200
    _resolve()
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decided_by, proposal.reason) == ("withdrawn", DEFAULT_AUTHOR,
                                                                        "the alert resolved meanwhile")

    second = worker(concurrency=2)
    (done,) = wait_terminal([session.id], 120, second)
    assert done.status == "completed", (done.error_message, second.log()[-3000:])
    assert read_state(state)["shop/api"]["replicas"] == 1
    assert "WITHDRAWN" in _told(done.id, 2)
    assert _transitions(done.id) == [("proposed", None), ("approved", None), ("withdrawn", None)]


@pytest.mark.timeout(240)
def test_no_action_is_proposed_once_the_alert_resolved(scripted_config, worker, tmp_path):
    state = _setup(scripted_config, tmp_path, {"Fixer": [
        _get(), _scale(3), {"text": "The alert resolved; no action."}]}, latency_ms=1500)
    proc = worker(concurrency=2)
    session = _submit()
    wait_for(lambda: AgentExecution.objects.filter(session=session, status="active").exists(), timeout=60,
             message="the investigation to start")
    _resolve()  # while the first iteration thinks
    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    assert not ActionProposal.objects.exists()
    refusal = TimelineEvent.objects.get(session=done, event_type="tool_result", metadata__tool_name="resources_scale")
    assert "no action is taken on a resolved alert" in refusal.content and refusal.metadata["is_error"] is True
    assert read_state(state)["shop/api"]["replicas"] == 1


# ---- the rate limit per target --------------------------------------------------------------------------------

@pytest.mark.timeout(240)
def test_a_proposal_beyond_the_rate_limit_of_its_target_is_refused(scripted_config, worker, tmp_path):
    _setup(scripted_config, tmp_path, {"Fixer": [_scale(3), {"text": "Rate limited: a person should look."}]},
           actions={"rate_limit": {"max_per_target": 1, "window": "1h"}})
    proc = worker(concurrency=2)
    first = session_submit(alert_type="repair", data={"deployment": "shop/api"})
    _, proposal = _parked_on(first, 1)  # pending: it counts
    second = session_submit(alert_type="repair", data={"deployment": "shop/api", "again": True})
    (done,) = wait_terminal([second.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    assert not ActionProposal.objects.filter(session=done).exists()
    refusal = TimelineEvent.objects.get(session=done, event_type="tool_result", metadata__tool_name="resources_scale")
    assert refusal.metadata["is_error"] is True
    assert 'rate limit: 1 action(s) on cluster {"name": "api", "namespace": "shop"} within 3600s' in refusal.content
    assert proposal.target == 'cluster {"name": "api", "namespace": "shop"}'


# ---- the session clock ------------------------------------------------------------------------------------------

@pytest.mark.timeout(240)
def test_a_session_waiting_for_an_approval_past_its_timeout_is_not_timed_out_and_resumes(scripted_config, worker,
                                                                                         tmp_path):
    state = _setup(scripted_config, tmp_path, {"Fixer": [
        _scale(3), {"text": "Scaled to 3 after a long approval; verified {evidence}."}]}, timeout="15s")
    proc = worker(concurrency=2)
    session = _submit()
    execution, proposal = _parked_on(session, 1)
    session.refresh_from_db()
    wait_for(lambda: time.time() > session.started_at.timestamp() + 18, timeout=30, interval=0.5,
             message="the session timeout to pass while the approval waits")
    assert sweep_once()["timed_out"] == 0
    session.refresh_from_db()
    assert session.status == "in_progress"

    assert _decide(proposal).status_code == 200
    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    proposal.refresh_from_db()
    assert (proposal.status, proposal.outcome) == ("executed", "verified")
    assert read_state(state)["shop/api"]["replicas"] == 3
    stage = Stage.objects.get(session=done)
    assert stage.type == "action"  # stored, and shown by the API and the session page
    shown = APIClient(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/sessions/{done.id}").json()
    assert [s["type"] for s in shown["stages"]] == ["action"]
    started = Event.objects.filter(session_id=done.id, type="stage.started").first()
    assert started is not None and started.payload["stage_type"] == "action"
    assert event_message(started)["type"] == "stage.started"  # the live event keeps its own type
    page = APIClient(REMOTE_ADDR="127.0.0.1").get(f"/sessions/{done.id}")
    assert page.status_code == 200 and 'data-stage-type="action"' in page.content.decode()


# ---- an action its execution never finished ------------------------------------------------------------------

@pytest.mark.timeout(240)
def test_an_action_whose_worker_died_and_whose_session_timed_out_is_recorded_as_of_unknown_effect(
        scripted_config, worker, tmp_path):
    state = _setup(scripted_config, tmp_path, {"Fixer": [_scale(3), {"text": "never reached"}]}, timeout="10s",
                   scale_delay_s=120)
    proc = worker(concurrency=2)
    session = _submit()
    _, proposal = _parked_on(session, 1)
    assert _decide(proposal).status_code == 200
    wait_for(lambda: ActionProposal.objects.filter(id=proposal.id, status="executing").exists(), timeout=60,
             message="the worker to claim the action")
    proc.kill()  # dies while the scale runs: whether it took effect is unknown

    def timed_out() -> bool:
        sweep_once()
        return AlertSession.objects.get(id=session.id).status == "timed_out"

    wait_for(timed_out, timeout=60, interval=1, message="the sweeper to time the session out")
    proposal.refresh_from_db()
    assert (proposal.status, proposal.outcome) == ("executed", "failed")
    assert proposal.result.startswith("Interrupted while it ran: whether it took effect is unknown")
    assert _transitions(session.id) == [("proposed", None), ("approved", None), ("executed", "failed")]
    assert read_state(state)["shop/api"]["replicas"] == 1


@pytest.mark.timeout(240)
def test_a_cancelled_session_withdraws_its_pending_action(scripted_config, worker, tmp_path):
    _setup(scripted_config, tmp_path, {"Fixer": [_scale(3), {"text": "never reached"}]})
    proc = worker(concurrency=2)
    session = _submit()
    _, proposal = _parked_on(session, 1)
    cancelled = APIClient(REMOTE_ADDR="127.0.0.1").post(f"/api/v1/sessions/{session.id}/cancel")
    assert cancelled.status_code in (200, 202), cancelled.content
    (done,) = wait_terminal([session.id], 60, proc)
    assert done.status == "cancelled"
    proposal.refresh_from_db()
    assert (proposal.status, proposal.reason) == ("withdrawn", "the investigation ended (cancelled) before it ran")
    assert _decide(proposal).status_code == 409


# ---- the wait, counted once -----------------------------------------------------------------------------------

def test_overlapping_waits_for_a_person_are_counted_once(scripted_config, tmp_path):
    """Two agents of a parallel stage waiting at once stop the clock once: the union of the waits, up to now for
    one still pending; a proposal withdrawn as it was made waited nothing."""
    from datetime import timedelta

    from django.utils import timezone

    from tarsy.services.actions import actions_wait_s

    _setup(scripted_config, tmp_path, {"Fixer": [{"text": "never runs"}]})
    session = _submit()
    stage = Stage.objects.create(session=session, name="remediate", index=0, type="action")
    execution = AgentExecution.objects.create(stage=stage, session=session, agent_name="Fixer",
                                              iteration_strategy="native-thinking")
    now = timezone.now()

    def proposal(start_min: int, end_min: int | None, status: str) -> None:
        row = ActionProposal.objects.create(session=session, execution=execution, iteration=1, server="cluster",
                                            tool="resources_scale", status=status, expires_at=now)
        decided = now - timedelta(minutes=end_min) if end_min is not None else None
        ActionProposal.objects.filter(id=row.id).update(created_at=now - timedelta(minutes=start_min),
                                                        decided_at=decided)

    proposal(60, 40, "approved")  # 60 → 40 minutes ago
    proposal(50, 30, "rejected")  # overlaps it: 60 → 30
    proposal(20, None, "pending")  # 20 → now
    proposal(10, 10, "withdrawn")  # withdrawn at once
    assert actions_wait_s(session_id=session.id, now=now) == pytest.approx(50 * 60)
