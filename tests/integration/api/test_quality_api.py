"""Reviews, re-score requests, the quality filters of the session list and the quality overview, over HTTP."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tarsy.models import Event, SessionScore
from tests.support.configdir import PROXY_ON_LOOPBACK, scripted_provider, write_config

pytestmark = [pytest.mark.django_db]


def score(session, value, support, tags=(), status="scored"):
    return SessionScore.objects.create(session=session, status=status, score=value, support=support,
                                       scorer_score=value, rationale="r", tags=list(tags))


def test_a_review_round_trip_records_its_author(tmp_path, investigated):
    write_config(tmp_path, tarsy={"system": PROXY_ON_LOOPBACK})  # people named by the proxy
    api = APIClient(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_USER="reader")
    session = investigated()
    url = f"/api/v1/sessions/{session.id}/review"
    assert api.get(url).json() == {"session_id": str(session.id), "review": None}

    response = api.post(url, {"rating": "partially_accurate", "feedback": " Right pod, wrong cause. ",
                              "action_taken": "Restored the config map"}, format="json",
                        HTTP_X_FORWARDED_USER="alice")
    assert response.status_code == 200, response.content
    review = response.json()["review"]
    assert (review["rating"], review["feedback"], review["author"]) == (
        "partially_accurate", "Right pod, wrong cause.", "alice")
    assert api.get(url).json()["review"]["action_taken"] == "Restored the config map"

    # Saving again replaces the verdict and names the latest author.
    api.post(url, {"rating": "inaccurate"}, format="json", HTTP_X_FORWARDED_USER="bob")
    detail = api.get(f"/api/v1/sessions/{session.id}").json()
    assert (detail["review"]["rating"], detail["review"]["author"]) == ("inaccurate", "bob")
    row = api.get("/api/v1/sessions").json()["results"][0]
    assert row["review"]["rating"] == "inaccurate"
    # Each save tells the session's page and the sessions list (persisted for catch-up).
    events = Event.objects.filter(session_id=session.id, type="session.quality").order_by("id")
    assert {e.channel for e in events} == {f"session:{session.id}", "sessions"}
    assert events.last().payload["review"] == {"rating": "inaccurate", "author": "bob"}


@pytest.mark.parametrize("body, field", [({"rating": "great"}, "rating"), ({}, "rating"),
                                         ({"rating": "accurate", "feedback": "x" * 10_001}, "feedback")])
def test_a_bad_review_is_a_400_naming_the_field(api, investigated, body, field):
    session = investigated()
    response = api.post(f"/api/v1/sessions/{session.id}/review", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["detail"]


def test_a_running_session_cannot_be_reviewed_or_scored(api, make_session, config_dir):
    write_config(config_dir, tarsy={"scoring": {"llm_provider": "scorer"}},
                 providers={"scorer": scripted_provider({"scoring": [{"text": "{}"}]})})
    session = make_session(status="in_progress")
    assert api.post(f"/api/v1/sessions/{session.id}/review", {"rating": "accurate"},
                    format="json").status_code == 409
    response = api.post(f"/api/v1/sessions/{session.id}/score")
    assert response.status_code == 409
    assert response.json() == {"error": "session is in_progress: only completed sessions are scored",
                               "detail": {"status": "in_progress"}}
    assert api.post("/api/v1/sessions/00000000-0000-0000-0000-000000000000/score").status_code == 404


def test_re_scoring_without_a_scoring_provider_is_a_409(api, investigated):
    session = investigated()
    response = api.post(f"/api/v1/sessions/{session.id}/score")
    assert response.status_code == 409
    assert "not configured" in response.json()["error"]


def test_the_list_filters_by_review_state_rating_score_and_tag(api, investigated, make_session):
    good, bad, unreviewed, failed_run = investigated(), investigated(), investigated(), make_session(status="failed")
    score(good, 85, "supported")
    score(bad, 20, "unsupported", ["red_herring", "ignored_evidence"])
    score(unreviewed, 50, "partly", ["uncited_claim"])
    for session, rating in ((good, "accurate"), (bad, "inaccurate")):
        api.post(f"/api/v1/sessions/{session.id}/review", {"rating": rating}, format="json")

    def ids(**query):
        response = api.get("/api/v1/sessions", query)
        assert response.status_code == 200, response.content
        return {row["id"] for row in response.json()["results"]}

    assert ids(review="needs_review") == {str(unreviewed.id)}  # the failed run has no analysis to review
    assert ids(review="reviewed") == {str(good.id), str(bad.id)}
    assert ids(rating="inaccurate,partially_accurate") == {str(bad.id)}
    assert ids(tag="red_herring") == {str(bad.id)}
    assert ids(score_min=40) == {str(good.id), str(unreviewed.id)}
    assert ids(scoring="unscored") == {str(failed_run.id)}
    ordered = [row["id"] for row in api.get("/api/v1/sessions", {"ordering": "-score"}).json()["results"]]
    assert ordered == [str(good.id), str(unreviewed.id), str(bad.id), str(failed_run.id)]
    for bad_query in ({"tag": "nonsense"}, {"review": "maybe"}, {"score_min": "high"}, {"rating": "wow"}):
        response = api.get("/api/v1/sessions", bad_query)
        assert response.status_code == 400, bad_query
        assert set(bad_query) <= set(response.json()["detail"])


def test_the_overview_groups_scores_and_reviews_and_measures_agreement(api, investigated):
    sessions = [investigated() for _ in range(4)]
    score(sessions[0], 90, "supported")
    score(sessions[1], 70, "supported", ["uncited_claim"])
    score(sessions[2], 20, "unsupported", ["red_herring"])
    for session, rating in ((sessions[0], "accurate"), (sessions[1], "inaccurate"), (sessions[2], "inaccurate")):
        api.post(f"/api/v1/sessions/{session.id}/review", {"rating": rating}, format="json")

    response = api.get("/api/v1/quality")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["sessions"], body["scored"], body["reviewed"], body["needs_review"]) == (4, 3, 3, 1)
    assert body["mean_score"] == 60.0
    [chain] = body["by_chain"]
    assert chain["name"] == "kubernetes" and chain["bands"] == {"supported": 2, "partly": 0, "unsupported": 1}
    assert chain["histogram"][9] == 1 and chain["histogram"][7] == 1 and chain["histogram"][2] == 1
    assert chain["reviews"] == {"accurate": 1, "partially_accurate": 0, "inaccurate": 2}
    assert [a["name"] for a in body["by_agent"]] == ["KubernetesAgent"]
    assert [p["name"] for p in body["by_provider"]] == ["scripted"]
    agreement = body["agreement"]
    assert (agreement["pairs"], agreement["agreeing"], agreement["rate"]) == (3, 2, 0.667)
    assert agreement["matrix"]["supported"]["inaccurate"] == 1
    assert agreement["mean_score_by_rating"] == {"accurate": 90.0, "partially_accurate": None, "inaccurate": 45.0}

    assert api.get("/api/v1/quality", {"start_date": "2001-01-01", "end_date": "2001-01-02"}).json()["sessions"] == 0
    assert api.get("/api/v1/quality", {"created_within": "forever"}).status_code == 400


def test_a_failed_re_score_keeps_the_old_score_with_its_own_time_and_records_the_failure_apart(
        api, investigated, tmp_path):
    from django.test import Client

    from tarsy.services import quality

    session = investigated()
    SessionScore.objects.create(session=session, status="pending")
    quality.score_store(session_id=session.id, score=82, support="strong", scorer_score=80, rationale="fine",
                        tags=[], signals={"kept": True}, provider="judge", model="m1")
    scored_at = SessionScore.objects.get(session=session).scored_at
    quality.score_fail(session_id=session.id, error="scorer timed out", signals={"new": True}, provider="other",
                       model="m2")

    body = api.get(f"/api/v1/sessions/{session.id}").json()["score"]
    assert (body["status"], body["score"], body["provider"], body["signals"]) == ("failed", 82, "judge", {"kept": True})
    assert body["scored_at"] == scored_at.isoformat().replace("+00:00", "Z")
    assert body["failed_at"] and body["failed_at"] > body["scored_at"] and body["error"] == "scorer timed out"
    page = Client(REMOTE_ADDR="127.0.0.1").get(f"/sessions/{session.id}").content.decode()
    assert "Scoring failed" in page and 'id="score-previous"' in page and "<strong>82</strong>" in page
