"""Alert in over HTTP → real Celery worker process on Redis + PostgreSQL → completed session out over HTTP."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tarsy.models import AlertSession, LLMInteraction, Message, TimelineEvent
from tests.support.processes import wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

SCRIPT = {
    "KubernetesAgent": [{"thinking": "Looking at the alert.",
                         "text": "Thought: The alert names a crash loop.\nFinal Answer: web-1 crashes because "
                                 "its config map is missing."}],
    "executive_summary": [{"text": "web-1 is crash-looping because of a missing config map."}],
}


def test_alert_is_investigated_by_a_separate_worker_process(scripted_config, worker):
    scripted_config(SCRIPT)
    proc = worker()
    client = APIClient()
    response = client.post("/api/v1/alerts", {"alert_type": "kubernetes", "data": "pod web-1 CrashLoopBackOff"},
                           format="json")
    assert response.status_code == 202, response.content
    session_id = response.json()["session_id"]
    assert response.json()["status"] == "queued"

    def finished():
        session = AlertSession.objects.get(id=session_id)
        return session if session.is_terminal else None

    try:
        session = wait_for(finished, timeout=60, message="session to finish")
    except AssertionError:
        raise AssertionError(f"worker log:\n{proc.log()}") from None
    assert session.status == "completed", (session.error_message, proc.log())
    assert "config map is missing" in session.final_analysis
    assert session.executive_summary == "web-1 is crash-looping because of a missing config map."
    assert session.worker_id
    body = client.get(f"/api/v1/sessions/{session_id}").json()
    assert body["status"] == "completed"
    assert body["final_analysis"] == session.final_analysis
    assert [s["name"] for s in body["stages"]] == ["analysis"]
    assert body["stages"][0]["executions"][0]["status"] == "completed"
    events = list(TimelineEvent.objects.filter(session_id=session_id).values_list("event_type", flat=True))
    assert "final_analysis" in events and "executive_summary" in events
    roles = list(Message.objects.filter(session_id=session_id).values_list("role", flat=True))
    assert roles == ["system", "user", "assistant"]
    assert set(LLMInteraction.objects.filter(session_id=session_id).values_list("interaction_type", flat=True)) == {
        "iteration", "executive_summary"}
