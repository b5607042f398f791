"""One session: detail, timeline, interactions, summary, cancel, delete, chat; system endpoints; /metrics."""

from __future__ import annotations

import uuid

import pytest

from tarsy.models import AgentExecution, Chat, ChatUserMessage, Stage
from tarsy.pipeline.stages import execution_end
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]


def test_detail_has_stages_executions_tokens_and_chat_availability(api, investigated):
    session = investigated()
    body = api.get(f"/api/v1/sessions/{session.id}").json()
    assert body["status"] == "completed" and body["chat_available"] is True
    assert body["alert_data"] == "pod web-1 CrashLoopBackOff"
    assert (body["total_tokens"], body["duration_seconds"]) == (160, 60.0)
    stage = body["stages"][0]
    assert (stage["name"], stage["total_tokens"], stage["thinking_tokens"]) == ("analysis", 160, 10)
    assert stage["executions"][0]["agent_name"] == "KubernetesAgent"
    assert stage["executions"][0]["input_tokens"] == 120
    assert body["last_event_id"] > 0  # the submission's session.status event


@pytest.mark.parametrize("path", ["", "/timeline", "/interactions", "/summary", "/chat/messages"])
def test_unknown_or_malformed_session_id_is_json_404(api, path):
    unknown = api.get(f"/api/v1/sessions/{uuid.uuid4()}{path}")
    assert unknown.status_code == 404 and unknown.json()["error"].endswith("not found")
    malformed = api.get(f"/api/v1/sessions/not-a-uuid{path}")
    assert malformed.status_code == 404 and malformed.json()["error"] == "not_found"


def test_timeline_lists_events_in_order(api, investigated):
    session = investigated()
    body = api.get(f"/api/v1/sessions/{session.id}/timeline").json()
    assert [e["event_type"] for e in body["events"]] == ["llm_thinking", "mcp_tool_call", "final_analysis"]
    assert body["events"][2]["content"] == session.final_analysis
    assert body["last_event_id"] > 0


def test_interactions_carry_llm_conversations_and_mcp_calls(api, investigated):
    session = investigated()
    body = api.get(f"/api/v1/sessions/{session.id}/interactions").json()
    llm, mcp = body["llm_interactions"], body["mcp_interactions"]
    assert llm[0]["conversation"] == [{"role": "user", "content": "alert"}]
    assert llm[0]["stage_id"] == Stage.objects.get(session=session).id
    assert (mcp[0]["server"], mcp[0]["tool"], mcp[0]["arguments"], mcp[0]["success"]) == (
        "kubernetes-server", "pods_get", {"name": "web-1"}, False)


def test_summary_counts_and_tokens(api, investigated):
    session = investigated()
    body = api.get(f"/api/v1/sessions/{session.id}/summary").json()
    assert (body["stages"], body["executions"], body["llm_interactions"], body["mcp_interactions"]) == (1, 1, 1, 1)
    assert (body["failed_mcp_interactions"], body["timeline_events"], body["errors"]) == (1, 3, 0)
    assert body["tokens"] == {"input_tokens": 120, "output_tokens": 30, "thinking_tokens": 10, "total_tokens": 160,
                              "cached_tokens": 0}
    assert (body["cost_usd"], body["unpriced_calls"], body["budget_reached"]) == ("0.0000000000", 0, None)


def test_cancel_pending_session_and_409_when_finished(api, make_session):
    pending = make_session(status="pending")
    response = api.post(f"/api/v1/sessions/{pending.id}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    again = api.post(f"/api/v1/sessions/{pending.id}/cancel")
    assert again.status_code == 409
    assert again.json() == {"error": "session is cancelled and cannot be cancelled", "detail": {"status": "cancelled"}}


def test_cancel_running_session_moves_it_to_cancelling(api, make_session):
    running = make_session(status="in_progress")
    response = api.post(f"/api/v1/sessions/{running.id}/cancel")
    assert (response.status_code, response.json()["status"]) == (200, "cancelling")


def test_delete_is_soft_and_refused_while_running(api, make_session):
    running = make_session(status="in_progress")
    refused = api.delete(f"/api/v1/sessions/{running.id}")
    assert refused.status_code == 409 and refused.json()["error"] == "cancel the session before deleting it"
    done = make_session(status="completed")
    assert api.delete(f"/api/v1/sessions/{done.id}").status_code == 204
    assert api.get(f"/api/v1/sessions/{done.id}").status_code == 404
    assert type(done).all_objects.get(id=done.id).deleted_at is not None


def test_chat_question_reply_and_one_at_a_time(api, investigated):
    session = investigated()
    asked = api.post(f"/api/v1/sessions/{session.id}/chat/messages", {"content": "Which config map?"}, format="json")
    assert asked.status_code == 202, asked.content
    stage_id = asked.json()["stage_id"]
    busy = api.post(f"/api/v1/sessions/{session.id}/chat/messages", {"content": "And why?"}, format="json")
    assert busy.status_code == 409 and busy.json()["error"] == "a chat reply is still running for this session"
    running = api.get(f"/api/v1/sessions/{session.id}/chat/messages").json()
    assert running["reply_running"] is True
    assert [(m["role"], m["status"]) for m in running["messages"]] == [("user", "submitted"), ("assistant", "active")]
    execution = AgentExecution.objects.get(stage_id=stage_id)
    execution_end(execution_id=execution.id, status="completed", final_analysis="The one named web-cfg.")
    done = api.get(f"/api/v1/sessions/{session.id}/chat/messages").json()
    assert done["reply_running"] is False
    assert [(m["role"], m["content"], m["author"]) for m in done["messages"]] == [
        ("user", "Which config map?", "api-client"), ("assistant", "The one named web-cfg.", "")]


def test_chat_refusals(api, make_session, investigated):
    session = investigated()
    too_long = api.post(f"/api/v1/sessions/{session.id}/chat/messages", {"content": "x" * 100_001}, format="json")
    assert too_long.status_code == 400 and too_long.json()["error"] == "message too long"
    empty = api.post(f"/api/v1/sessions/{session.id}/chat/messages", {"content": "   "}, format="json")
    assert empty.status_code == 400
    running = make_session(status="in_progress")
    not_yet = api.post(f"/api/v1/sessions/{running.id}/chat/messages", {"content": "hello"}, format="json")
    assert not_yet.status_code == 409 and not_yet.json()["error"] == "chat is not available: the session is in progress"
    missing = api.post(f"/api/v1/sessions/{uuid.uuid4()}/chat/messages", {"content": "hello"}, format="json")
    assert missing.status_code == 404
    assert not ChatUserMessage.objects.filter(chat__in=Chat.objects.exclude(session=session)).exists()


def _unreachable_mcp_config(tmp_path):
    dead = {"transport": {"type": "http", "url": "http://127.0.0.1:9/mcp", "timeout": "2s"}}
    return write_config(tmp_path / "cfg", tarsy={"mcp_servers": {"kubernetes-server": dead, "demo-kubernetes": dead}})


@pytest.mark.services
def test_mcp_servers_and_warnings_report_failing_servers(api, tmp_path):
    _unreachable_mcp_config(tmp_path)
    servers = {s["name"]: s for s in api.get("/api/v1/system/mcp-servers").json()["servers"]}
    assert servers["demo-kubernetes"]["status"] == "error" and servers["demo-kubernetes"]["error"]
    assert servers["kubernetes-server"]["status"] == "unused"  # without KUBECONFIG no chain uses it
    warnings = api.get("/api/v1/system/warnings").json()["warnings"]
    assert any(w["category"] == "mcp" and "demo-kubernetes" in w["message"] for w in warnings)
    assert not any("kubernetes-server" in w["message"] for w in warnings)
    assert any(w["category"] == "runtime" for w in warnings)  # no worker runs in this test


@pytest.mark.services
def test_health_is_503_json_without_workers(api):
    response = api.get("/health")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["database"] == "ok" and body["checks"]["workers"] == "degraded"


def test_metrics_expose_submissions_and_session_gauges(api, make_session):
    make_session(status="pending")
    make_session(status="in_progress")
    api.post("/api/v1/alerts", {"data": "one more"}, format="json")
    response = api.get("/metrics")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert 'tarsy_sessions_submitted_total{alert_type="kubernetes"}' in text
    assert "tarsy_sessions_queued 2.0" in text and "tarsy_sessions_active 1.0" in text
    assert 'tarsy_sessions{status="in_progress"} 1.0' in text
