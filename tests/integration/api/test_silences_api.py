"""Silences over HTTP: what intake does under one, the session JSON and pages that show it, and bad input as 4xx;
the checks endpoints' answers and refusals."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tarsy.models import AlertSession, Silence, TriageActivity
from tarsy.selectors.queue import in_queue_order
from tarsy.services import checks as check_service
from tarsy.services import silences
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db]
GITHUB_TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"


def alert(namespace: str, name: str = "PodCrashLooping") -> dict:
    return {"alert_type": "kubernetes", "data": {"labels": {"alertname": name, "namespace": namespace},
                                                 "message": f"{name} in {namespace}"}}


def soon(hours: float = 2) -> str:
    return (timezone.now() + timedelta(hours=hours)).isoformat()


def silence(api, **body):
    body.setdefault("ends_at", soon())
    body.setdefault("reason", "payments DB migration, CHG-1234")
    return api.post("/api/v1/silences", body, format="json")


def post_alert(api, body):
    response = api.post("/api/v1/alerts", body, format="json")
    assert response.status_code == 202, response.content
    return AlertSession.objects.get(id=response.json()["session_id"])


def test_a_matching_alert_is_stored_silenced_and_an_other_one_is_queued(api):
    created = silence(api, matchers={"labels.namespace": "payments"}, reason=f"maintenance, token {GITHUB_TOKEN}")
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["created_by"], body["state"], body["mode"]) == ("api-client", "active", "skip")
    assert GITHUB_TOKEN not in body["reason"]  # outside text, masked like the rest

    answer = api.post("/api/v1/alerts", alert("payments"), format="json").json()
    assert answer["status"] == "silenced"
    quiet = AlertSession.objects.get(id=answer["session_id"])
    loud = post_alert(api, alert("shop"))
    assert (quiet.status, quiet.silenced_by_id, quiet.triage_status) == ("silenced", body["id"], "")
    assert quiet.completed_at is not None and not quiet.stages.exists()
    assert (loud.status, loud.silenced_by_id) == ("pending", None)
    assert [s.id for s in in_queue_order(AlertSession.objects.all())] == [loud.id]  # dispatch never sees it

    detail = api.get(f"/api/v1/sessions/{quiet.id}").json()
    assert (detail["status"], detail["silenced_by"], detail["triage_status"]) == ("silenced", body["id"], "")
    rows = {r["id"]: r for r in api.get("/api/v1/sessions").json()["results"]}
    assert rows[str(quiet.id)]["silenced_by"] == body["id"] and rows[str(loud.id)]["silenced_by"] is None
    assert api.get("/api/v1/sessions?status=silenced").json()["count"] == 1
    assert api.get(f"/api/v1/silences/{body['id']}").json()["session_count"] == 1

    page = api.get(f"/sessions/{quiet.id}").content.decode()
    assert f"silence #{body['id']}" in page and "maintenance, token" in page and GITHUB_TOKEN not in page
    assert f"silence #{body['id']}" in api.get("/").content.decode()


def test_repeats_under_a_silence_fold_into_its_session_and_the_end_lets_the_next_one_through(api):
    made = silence(api, alert_type="kubernetes", matchers={"labels.alertname": "PodCrashLooping"}).json()
    first = post_alert(api, alert("payments"))
    again = api.post("/api/v1/alerts", alert("payments"), format="json").json()
    assert (again["session_id"], again["deduplicated"]) == (str(first.id), True)

    ended = api.delete(f"/api/v1/silences/{made['id']}")
    assert ended.status_code == 200 and (ended.json()["state"], ended.json()["ended_by"]) == ("ended", "api-client")
    assert api.delete(f"/api/v1/silences/{made['id']}").status_code == 409
    after = post_alert(api, alert("payments"))
    assert after.id != first.id and (after.status, after.silenced_by_id) == ("pending", None)
    assert [s["id"] for s in api.get("/api/v1/silences").json()["results"]] == []
    assert [s["id"] for s in api.get("/api/v1/silences?state=ended").json()["results"]] == [made["id"]]


def test_a_low_priority_silence_queues_the_alert_behind_later_ones(api):
    silence(api, matchers={"labels.namespace": "payments"}, mode="low_priority")
    early = post_alert(api, alert("payments"))
    later = post_alert(api, {**alert("shop"), "severity": "info"})
    assert (early.status, early.silenced_by_id is not None) == ("pending", True)
    assert [s.id for s in in_queue_order(AlertSession.objects.all())] == [later.id, early.id]


def test_a_scheduled_silence_and_other_alert_types_do_not_match(api):
    silence(api, alert_type="kubernetes", matchers={"labels.namespace": "payments"},
            starts_at=soon(1), ends_at=soon(3))
    assert post_alert(api, alert("payments")).status == "pending"
    assert api.get("/api/v1/silences").json()["results"][0]["state"] == "scheduled"


@pytest.mark.parametrize("body, field", [
    ({"matchers": {}}, "matchers"),  # silencing everything is refused
    ({"alert_type": "no-such-type"}, "alert_type"),
    ({"matchers": {"labels namespace": "x"}}, "matchers"),
    ({"matchers": {"labels.namespace": ""}}, "matchers"),
    ({"matchers": ["labels.namespace"]}, "matchers"),
    ({"matchers": {"labels.namespace": {"a": 1}}}, "matchers"),
    ({"matchers": {"a": "b"}, "mode": "mute"}, "mode"),
    ({"matchers": {"a": "b"}, "ends_at": "tomorrow"}, "ends_at"),
    ({"matchers": {"a": "b"}, "ends_at": "2001-01-01T00:00:00Z"}, "ends_at"),
    ({"matchers": {"a": "b"}, "starts_at": "2099-01-02T00:00:00Z", "ends_at": "2099-01-01T00:00:00Z"}, "ends_at"),
    ({"matchers": {"a": "b"}, "reason": ""}, "reason"),
    ({"matchers": {"a": "b"}, "reason": "x" * 2001}, "reason"),
    ({"matchers": {f"k{i}": "v" for i in range(21)}}, "matchers"),
])
def test_bad_silences_are_a_clear_400(api, body, field):
    response = silence(api, **body)
    assert response.status_code == 400, response.content
    assert field in response.json()["detail"]
    assert not Silence.objects.exists()


def test_silence_errors_are_json_4xx(api):
    assert api.delete("/api/v1/silences/999").status_code == 404
    assert api.get("/api/v1/silences/999").status_code == 404
    assert api.get("/api/v1/silences?state=sometimes").status_code == 400
    assert api.post("/api/v1/silences", "reason=x", content_type="application/x-www-form-urlencoded").status_code == 415


def test_silences_need_authentication_like_every_write(tmp_path, api):
    write_config(tmp_path / "cfg", tarsy={"system": {"auth": {"mode": "token"}}})
    assert silence(api, matchers={"a": "b"}).status_code == 401
    assert api.delete("/api/v1/silences/1").status_code == 401
    assert api.post("/api/v1/checks/x/run").status_code == 401


def test_the_admin_adds_and_ends_silences_through_the_same_rules(admin_client):
    response = admin_client.post("/admin/tarsy/silence/add/", {
        "alert_type": "", "matchers": "{}", "mode": "skip", "starts_at_0": "2099-01-01", "starts_at_1": "00:00:00",
        "ends_at_0": "2099-01-02", "ends_at_1": "00:00:00", "reason": "window"})
    assert response.status_code == 200 and "silence of every alert is refused" in response.content.decode()
    response = admin_client.post("/admin/tarsy/silence/add/", {
        "alert_type": "kubernetes", "matchers": "{}", "mode": "skip", "starts_at_0": "2099-01-01",
        "starts_at_1": "00:00:00", "ends_at_0": "2099-01-02", "ends_at_1": "00:00:00", "reason": "window"})
    assert response.status_code == 302
    made = Silence.objects.get()
    assert made.created_by == "admin"
    admin_client.post("/admin/tarsy/silence/", {"action": "end_now", "_selected_action": [made.id]})
    made.refresh_from_db()
    assert made.ended_by == "admin" and made.ends_at <= timezone.now()


CHECKS = {"agent_chains": {"probe": {"stages": [{"name": "check", "agents": [{"name": "KubernetesAgent"}]}]}},
          "checks": [{"name": "payments-pods", "schedule": "*/5 * * * *", "chain": "probe",
                      "instruction": "Verify every pod in namespace payments is running and ready."}]}


def test_checks_list_run_now_and_refusals(tmp_path, api):
    write_config(tmp_path / "cfg", tarsy=CHECKS)
    listed = api.get("/api/v1/checks").json()
    assert [(c["name"], c["schedule"], c["chain"], c["last_result"], c["last_run"]) for c in listed] == [
        ("payments-pods", "*/5 * * * *", "probe", "", None)]
    assert api.post("/api/v1/checks/nope/run").status_code == 404
    run = api.post("/api/v1/checks/payments-pods/run")
    assert run.status_code == 202, run.content
    session = AlertSession.objects.get(id=run.json()["id"])
    assert (session.alert_type, session.chain_id, session.check_name, session.author) == (
        "scheduled_check", "probe", "payments-pods", "api-client")
    again = api.post("/api/v1/checks/payments-pods/run")
    assert again.status_code == 409 and str(session.id) in again.json()["error"] + str(again.json()["detail"])
    assert api.get("/api/v1/checks").json()[0]["last_run"]["id"] == str(session.id)
    assert "payments-pods" in api.get("/checks").content.decode()


def test_the_scheduled_check_alert_type_is_not_open_to_senders(tmp_path, api):
    write_config(tmp_path / "cfg", tarsy=CHECKS)
    response = api.post("/api/v1/alerts", {"alert_type": "scheduled_check", "data": "all is fine"}, format="json")
    assert response.status_code == 400 and "alert_type" in response.json()["detail"]


def test_a_silence_holds_a_check_run_too(tmp_path, api):
    write_config(tmp_path / "cfg", tarsy=CHECKS)
    silences.silence_create(actor="alice", reason="cluster upgrade", alert_type="scheduled_check",
                            ends_at=timezone.now() + timedelta(hours=1))
    session = check_service.check_run(name="payments-pods")
    assert (session.status, session.check_name) == ("silenced", "payments-pods")
    assert not TriageActivity.objects.exists()
