"""Triage over HTTP: the automatic needs_review, the actions with their log and events, races, bulk, bad input."""

from __future__ import annotations

import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from rest_framework.test import APIClient

from tarsy.models import AlertSession, Event, TriageActivity
from tarsy.services import sessions as session_service
from tests.support.configdir import PROXY_ON_LOOPBACK, write_config

pytestmark = [pytest.mark.django_db]
GITHUB_TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.fixture
def proxied(tmp_path):
    """For a test about who does what: people named by the authenticating proxy, alice unless `act` names another."""
    write_config(tmp_path / "cfg", tarsy={"system": PROXY_ON_LOOPBACK})
    return APIClient(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_USER="alice")


def act(api, session, user: str | None = None, **body):
    """A triage action by `user` (named by the proxy), else by whoever the client is."""
    named = {"HTTP_X_FORWARDED_USER": user} if user else {}
    return api.post(f"/api/v1/sessions/{session.id}/triage", body, format="json", **named)


def test_a_session_enters_needs_review_in_the_transaction_that_finishes_it(api, make_session):
    session = make_session(status="in_progress")
    assert api.get(f"/api/v1/sessions/{session.id}").json()["triage_status"] == ""
    assert act(api, session, action="claim").status_code == 409  # not finished: no triage yet

    session_service.session_set_status(session_id=session.id, status="completed", from_statuses=("in_progress",))
    detail = api.get(f"/api/v1/sessions/{session.id}").json()
    assert (detail["triage_status"], detail["assignee"]) == ("needs_review", "")
    row = api.get("/api/v1/sessions").json()["results"][0]
    assert (row["triage_status"], row["assignee"]) == ("needs_review", "")
    event = Event.objects.get(session_id=session.id, type="triage.updated", channel="sessions")
    assert (event.payload["triage_status"], event.payload["action"]) == ("needs_review", "finish")


def test_claim_assign_resolve_reopen_are_logged_and_published(proxied, make_session):
    api = proxied
    get_user_model().objects.create_user("bob")
    session = make_session(status="in_progress")
    session_service.session_set_status(session_id=session.id, status="failed", from_statuses=("in_progress",))

    assert act(api, session, action="claim", note="looking").json()["assignee"] == "alice"
    assert act(api, session, action="assign", assignee="bob", note="end of my shift").json()["assignee"] == "bob"
    resolved = act(api, session, user="bob", action="resolve", resolution="actioned", note="restarted web-1").json()
    assert (resolved["triage_status"], resolved["resolution"], resolved["resolution_note"]) == (
        "resolved", "actioned", "restarted web-1")
    reopened = act(api, session, action="reopen", note="it came back").json()
    assert (reopened["triage_status"], reopened["assignee"], reopened["resolution"]) == ("needs_review", "", "")

    activity = api.get(f"/api/v1/sessions/{session.id}/triage").json()["activity"]
    assert [(a["actor"], a["action"], a["from_status"], a["to_status"]) for a in activity] == [
        ("alice", "claim", "needs_review", "in_progress"),
        ("alice", "assign", "in_progress", "in_progress"),
        ("bob", "resolve", "in_progress", "resolved"),
        ("alice", "reopen", "resolved", "needs_review")]
    assert [a["note"] for a in activity] == ["looking", "end of my shift", "restarted web-1", "it came back"]
    events = Event.objects.filter(session_id=session.id, type="triage.updated")
    assert {e.channel for e in events} == {f"session:{session.id}", "sessions"}
    assert [e.payload["action"] for e in events.filter(channel="sessions").order_by("id")] == [
        "finish", "claim", "assign", "resolve", "reopen"]


def test_acknowledge_resolves_as_dismissed_by_the_caller(proxied, make_session):
    session = make_session(status="completed", triage_status="needs_review")
    body = act(proxied, session, user="carol", action="acknowledge").json()
    assert (body["triage_status"], body["resolution"], body["assignee"]) == ("resolved", "dismissed", "carol")


@pytest.mark.parametrize("body, status, field", [
    ({"action": "snooze"}, 400, "action"),
    ({"action": "resolve"}, 400, "resolution"),
    ({"action": "resolve", "resolution": "fixed"}, 400, "resolution"),
    ({"action": "assign"}, 400, "assignee"),
    ({"action": "assign", "assignee": "nobody-here"}, 400, "assignee"),
    ({"action": "reopen"}, 409, "triage_status"),
])
def test_bad_triage_input_is_a_clear_4xx(api, make_session, body, status, field):
    session = make_session(status="completed", triage_status="needs_review")
    response = act(api, session, **body)
    assert response.status_code == status, response.content
    assert field in response.json()["detail"]
    assert not TriageActivity.objects.exists()


def test_a_claim_on_a_claimed_session_names_the_owner(proxied, make_session):
    api = proxied
    session = make_session(status="completed", triage_status="needs_review")
    act(api, session, action="claim")
    response = act(api, session, user="bob", action="claim")
    assert response.status_code == 409
    assert response.json()["error"] == "cannot claim: triage is in_progress (assigned to alice)"
    assert api.get("/api/v1/sessions/00000000-0000-0000-0000-000000000000/triage").status_code == 404


def test_a_secret_in_a_note_is_never_stored(api, make_session):
    session = make_session(status="completed", triage_status="needs_review")
    act(api, session, action="resolve", resolution="actioned", note=f"rotated {GITHUB_TOKEN}")
    stored = AlertSession.objects.get(id=session.id).resolution_note
    assert stored.startswith("rotated ") and GITHUB_TOKEN not in stored
    assert GITHUB_TOKEN not in TriageActivity.objects.get().note


def test_bulk_resolve_of_fifty_sessions_reports_each(api, make_session):
    sessions = [make_session(status="completed", triage_status="needs_review") for _ in range(50)]
    running = make_session(status="in_progress")
    ids = [str(s.id) for s in sessions] + [str(running.id)]
    response = api.post("/api/v1/sessions/triage", {"session_ids": ids, "action": "resolve",
                                                   "resolution": "duplicate"}, format="json")
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [r["ok"] for r in results] == [True] * 50 + [False]
    assert "triage starts once it has finished" in results[-1]["error"]
    assert AlertSession.objects.filter(triage_status="resolved", resolution="duplicate").count() == 50
    bad = api.post("/api/v1/sessions/triage", {"session_ids": ids, "action": "resolve"}, format="json")
    assert bad.status_code == 400 and "resolution" in bad.json()["detail"]
    assert api.post("/api/v1/sessions/triage", {"session_ids": ids, "action": "reopen"},
                    format="json").status_code == 400


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_two_users_claiming_at_once_one_wins_the_other_gets_409(proxied, make_session):
    assert connection.vendor == "postgresql"
    session = make_session(status="completed", triage_status="needs_review")
    statuses: dict[str, int] = {}

    def claim(user: str) -> None:
        try:
            statuses[user] = act(APIClient(REMOTE_ADDR="127.0.0.1"), session, user=user, action="claim").status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(user,)) for user in ("alice", "bob")]
    # Hold the row so both claims have read nothing yet and queue on the lock, then let them race.
    with transaction.atomic():
        AlertSession.objects.select_for_update().get(id=session.id)
        for thread in threads:
            thread.start()
        time.sleep(0.5)
    for thread in threads:
        thread.join(30)
    assert sorted(statuses.values()) == [200, 409]
    winner = next(user for user, code in statuses.items() if code == 200)
    assert AlertSession.objects.get(id=session.id).assignee == winner
    assert TriageActivity.objects.filter(session_id=session.id).count() == 1
