"""Text a sender or reviewer chose is stored masked like the alert: a supplied fingerprint and group key, a
review's feedback and action taken — and a review reaches an exported eval scenario masked."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from tarsy.models import AlertSession, SessionReview
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db]

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"
PASSWORD = "hunter2xyz"
SECRETS = (AWS_KEY, GITHUB_TOKEN, PASSWORD)
SECRET_TEXT = f"aws {AWS_KEY} gh {GITHUB_TOKEN} password={PASSWORD}"


@pytest.fixture
def api() -> APIClient:
    return APIClient(REMOTE_ADDR="127.0.0.1")


def _no_secret(text: str) -> bool:
    return not any(secret in text for secret in SECRETS)


def test_a_supplied_fingerprint_and_group_key_are_stored_and_answered_masked(api, tmp_path):
    write_config(tmp_path, tarsy={"agent_chains": {"kubernetes": {
        "alert_types": ["kubernetes"], "correlation": {"labels": ["namespace"]},
        "stages": [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}]}}})
    response = api.post("/api/v1/alerts", {"data": {"namespace": "prod"}, "fingerprint": SECRET_TEXT[:128],
                                           "group_key": SECRET_TEXT}, format="json")
    assert response.status_code == 202, response.content
    session = AlertSession.objects.get(id=response.json()["session_id"])
    assert session.fingerprint.startswith("aws __MASKED_AWS_ACCESS_KEY__ gh __MASKED_GITHUB_TOKEN__")
    assert session.group_key == "aws __MASKED_AWS_ACCESS_KEY__ gh __MASKED_GITHUB_TOKEN__ password=__MASKED_PASSWORD__"
    detail = api.get(f"/api/v1/sessions/{session.id}").content.decode()
    assert _no_secret(detail) and _no_secret(api.get("/api/v1/sessions").content.decode())


def _finished_session() -> AlertSession:
    from tarsy.models import AgentExecution, LLMInteraction, Stage
    from tarsy.services.intake.alerts import session_submit

    session = session_submit(alert_type="kubernetes", data={"alertname": "KubePodCrashLooping", "pod": "web-1"})
    AlertSession.objects.filter(id=session.id).update(status="completed", final_analysis="Root cause: disk.")
    stage = Stage.objects.create(session=session, name="analysis", index=0, status="completed")
    execution = AgentExecution.objects.create(stage=stage, session=session, agent_name="KubernetesAgent",
                                              agent_config_name="KubernetesAgent",
                                              iteration_strategy="react", status="completed")
    LLMInteraction.objects.create(session=session, execution=execution, iteration=1, interaction_type="iteration",
                                  provider="scripted", conversation=[{"role": "user", "content": "alert"}, {
                                      "role": "assistant", "content": "Final Answer: Root cause: disk."}])
    return session


def test_review_feedback_and_action_taken_are_stored_and_answered_masked(api):
    session = _finished_session()
    url = f"/api/v1/sessions/{session.id}/review"
    response = api.post(url, {"rating": "inaccurate", "feedback": f"Rotated {SECRET_TEXT}",
                              "action_taken": f"export GITHUB_TOKEN={GITHUB_TOKEN}; password: {PASSWORD}"},
                        format="json")
    assert response.status_code == 200, response.content
    review = SessionReview.objects.get(session=session)
    assert review.feedback == ("Rotated aws __MASKED_AWS_ACCESS_KEY__ gh __MASKED_GITHUB_TOKEN__ "
                               "password=__MASKED_PASSWORD__")
    assert _no_secret(review.action_taken) and "__MASKED_GITHUB_TOKEN__" in review.action_taken
    assert _no_secret(json.dumps(api.get(url).json()))


def test_a_review_stored_before_masking_reaches_the_exported_scenario_masked(tmp_path):
    session = _finished_session()
    SessionReview.objects.create(session=session, rating="inaccurate", author="alice",
                                 feedback=f"It was {SECRET_TEXT}", action_taken=f"token {GITHUB_TOKEN}")
    call_command("export_scenario", "--reviewed", "inaccurate", str(tmp_path / "out"), stdout=io.StringIO())
    [folder] = list((tmp_path / "out").iterdir())
    text = "".join(path.read_text() for path in folder.iterdir())
    assert "It was aws __MASKED_AWS_ACCESS_KEY__" in text and _no_secret(text)
