"""Automatic scoring through the real pipeline: a real Celery worker finishes the session, then scores it with a
scripted scoring provider; the score, its tags and a scorer's failure are stored, the session stays completed."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from tarsy.models import AlertSession, LLMInteraction, SessionScore
from tests.support.configdir import scripted_provider
from tests.support.processes import wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

INVESTIGATION = {
    "KubernetesAgent": [{"text": "Thought: The alert names a crash loop.\nFinal Answer: web-1 crashes because "
                                 "its config map is missing."}],
    "executive_summary": [{"text": "web-1 is crash-looping: missing config map."}],
}
VERDICT = {"support": "supported", "score": 91, "rationale": "Plausible, but nothing was checked.",
           "tags": ["premature_conclusion", "Red Herring", "made_up_tag"]}


def _config(scripted_config, scorer_turns):
    scripted_config(INVESTIGATION, tarsy={"scoring": {"llm_provider": "scorer"}},
                    extra_providers={"scorer": scripted_provider({"scoring": scorer_turns})})


def _submit(client) -> str:
    response = client.post("/api/v1/alerts", {"alert_type": "kubernetes", "data": "pod web-1 CrashLoopBackOff"},
                           format="json")
    assert response.status_code == 202, response.content
    return response.json()["session_id"]


def _wait_score(session_id, proc, statuses=("scored", "failed")) -> SessionScore:
    try:
        return wait_for(lambda: SessionScore.objects.filter(session_id=session_id, status__in=statuses).first(),
                        timeout=60, interval=0.2, message="the session to be scored")
    except AssertionError:
        raise AssertionError(f"worker log:\n{proc.log()[-4000:]}") from None


def test_completed_session_is_scored_in_the_background(scripted_config, worker):
    _config(scripted_config, [{"text": "Here is my verdict:\n```json\n" + json.dumps(VERDICT) + "\n```"}])
    proc = worker()
    client = APIClient()
    session_id = _submit(client)
    score = _wait_score(session_id, proc)

    assert score.status == "scored", score.error
    assert AlertSession.objects.get(id=session_id).status == "completed"
    # No tool was called: "supported" is capped at the partly band (59), and the finding cites nothing (-5).
    assert (score.scorer_score, score.support, score.score) == (91, "partly", 54)
    assert score.tags == ["premature_conclusion", "red_herring", "uncited_claim", "no_tool_evidence"]
    assert score.signals["citations"]["uncited_findings"] == 1
    assert score.rationale == "Plausible, but nothing was checked."
    assert score.signals["unknown_tags"] == ["made_up_tag"]
    assert score.signals["tool_calls"] == 0
    assert score.signals["citations"]["state"] in ("unknown", "verified")
    call = LLMInteraction.objects.get(session_id=session_id, interaction_type="scoring")
    assert call.success and call.provider == "scorer"
    assert "web-1 crashes because its config map is missing" in call.conversation[1]["content"]

    body = client.get(f"/api/v1/sessions/{session_id}").json()
    assert body["score"]["score"] == 54 and body["score"]["tags"] == score.tags
    assert body["score"]["rationale"] == score.rationale
    listed = client.get("/api/v1/sessions", {"tag": "red_herring"}).json()["results"]
    assert [row["id"] for row in listed] == [session_id]
    assert listed[0]["score"] == {"status": "scored", "score": 54, "support": "partly", "tags": score.tags}
    assert client.get("/api/v1/sessions", {"support": "supported"}).json()["results"] == []
    assert [r["id"] for r in client.get("/api/v1/sessions", {"score_min": 50, "score_max": 60}).json()["results"]] \
        == [session_id]

    # Re-score: 202, pending at once, scored again by the worker.
    before = score.scored_at
    response = client.post(f"/api/v1/sessions/{session_id}/score")
    assert response.status_code == 202, response.content
    assert response.json() == {"session_id": session_id, "status": "pending"}
    rescored = wait_for(lambda: SessionScore.objects.filter(session_id=session_id, status="scored",
                                                            scored_at__gt=before).first(),
                        timeout=60, interval=0.2, message="the re-score")
    assert rescored.score == 54
    assert LLMInteraction.objects.filter(session_id=session_id, interaction_type="scoring").count() == 2


@pytest.mark.parametrize("turn, reason", [
    ({"text": "The analysis looks right to me."}, "holds no JSON verdict"),
    ({"text": '{"support": "supported", "score": 140, "rationale": "x"}'}, "score"),
    ({"error": {"message": "quota exhausted", "retryable": False}}, "scoring provider failed: quota exhausted"),
])
def test_a_scorer_failure_is_stored_and_the_session_stays_completed(scripted_config, worker, turn, reason):
    _config(scripted_config, [turn])
    proc = worker()
    client = APIClient()
    session_id = _submit(client)
    score = _wait_score(session_id, proc)

    assert score.status == "failed"
    assert reason in score.error
    assert score.score is None
    session = AlertSession.objects.get(id=session_id)
    assert session.status == "completed" and session.error_message == ""
    body = client.get(f"/api/v1/sessions/{session_id}").json()
    assert body["status"] == "completed" and body["score"]["status"] == "failed"
    assert [r["id"] for r in client.get("/api/v1/sessions", {"scoring": "failed"}).json()["results"]] == [session_id]


def test_the_stored_citation_check_feeds_the_score(scripted_config, worker):
    """The agent calls a tool (evidence E1) and cites it and a made-up E7: the check finds one invalid citation,
    which caps a 'supported' verdict at the top of the partly band."""
    from tests.browser.conftest import tools_server_config

    script = {
        "KubernetesAgent": [
            {"text": "Thought: Ask the probe.\nAction: test-tools.echo\nAction Input: {\"text\": \"config map "
                     "web-config not found\"}"},
            {"text": "Thought: Done.\nFinal Answer: web-1 crashes because config map web-config is missing [E1]; "
                     "it was deleted an hour ago [E7]."},
        ],
        "executive_summary": [{"text": "Missing config map."}],
    }
    scripted_config(script, tarsy={"scoring": {"llm_provider": "scorer"},
                                   "mcp_servers": {"test-tools": tools_server_config()},
                                   "agents": {"KubernetesAgent": {"mcp_servers": ["test-tools"]}}},
                    extra_providers={"scorer": scripted_provider({"scoring": [{"text": json.dumps(
                        {"support": "supported", "score": 90, "rationale": "Cited.", "tags": []})}]})})
    proc = worker()
    session_id = _submit(APIClient())
    score = _wait_score(session_id, proc)

    assert score.status == "scored", score.error
    assert score.signals["citations"] == {"state": "verified", "valid": 1, "invalid": 1, "cited": 2,
                                          "uncited_evidence": 0, "evidence": 1, "uncited_findings": 0}
    assert score.signals["tool_calls"] == 1
    assert (score.support, score.score, score.tags) == ("partly", 59, ["invalid_citation"])
    call = LLMInteraction.objects.get(session_id=session_id, interaction_type="scoring")
    assert "[E1]" in call.conversation[1]["content"]  # the scorer sees the evidence by its id
