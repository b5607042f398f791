"""Webhook intake: the vendors' documented payloads through the real API → sessions, resolutions and refusals."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tarsy.intake.signatures import pagerduty_signature
from tarsy.models import AlertSession, TimelineEvent
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "webhooks"
PD_SECRET = "pd-signing-secret-for-tests"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def post(api, source: str, body, **headers):
    return api.post(f"/api/v1/alerts/{source}", data=json.dumps(body), content_type="application/json", **headers)


def signed_post(api, body: dict, secret: str = PD_SECRET, *, fresh: bool = True):
    """Signed as PagerDuty signs; `fresh`: as a new event sent now (its own id, occurred_at now)."""
    if fresh:
        body = copy.deepcopy(body)
        body["event"].update(id=str(uuid.uuid4()), occurred_at=timezone.now().isoformat())
    raw = json.dumps(body).encode()
    return api.post("/api/v1/alerts/pagerduty", data=raw, content_type="application/json",
                    HTTP_X_PAGERDUTY_SIGNATURE=pagerduty_signature(raw, secret))


@pytest.fixture
def pagerduty_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("TARSY_PAGERDUTY_SECRET", PD_SECRET)
    write_config(tmp_path, tarsy={"intake": {"pagerduty": {"secret_env": "TARSY_PAGERDUTY_SECRET"}}})


def resolved_events(session_id):
    return list(TimelineEvent.objects.filter(session_id=session_id, event_type="alert_resolved")
                .values_list("content", "metadata"))


# ---- Alertmanager -----------------------------------------------------------------------------------------------

def test_alertmanager_delivery_starts_a_session_per_firing_alert_and_reports_the_resolved_one(api):
    response = post(api, "alertmanager", fixture("alertmanager_v4.json"))
    assert response.status_code == 202, response.content
    body = response.json()
    assert [s["fingerprint"] for s in body["sessions"]] == ["alertmanager:3f0c5a1e9b7d2c48",
                                                            "alertmanager:8a41d2e07c9b5f13"]
    assert body["resolved"] == [{"fingerprint": "alertmanager:c7e93b0a5d1f2684", "session_id": None,
                                 "action": "unmatched"}]
    first, second = (AlertSession.objects.get(id=s["session_id"]) for s in body["sessions"])
    assert (first.alert_type, first.severity, first.status, first.author) == (
        "kubernetes", "critical", "pending", "alertmanager")
    assert first.runbook_url.endswith("/KubePodCrashLooping.md")  # its annotation, on an allowed host
    assert (second.severity, second.runbook_url) == ("warning", "")
    stored = json.loads(first.alert_data)
    assert stored["alert"]["labels"]["pod"] == "checkout-7d9f8b6c5-x2lqp"
    assert stored["alert"]["generatorURL"].startswith("http://prometheus.monitoring:9090/graph")
    assert stored["externalURL"] == "http://alertmanager.monitoring:9093"
    assert body["sessions"][0]["session_url"] == f"http://testserver/sessions/{first.id}"
    assert AlertSession.objects.count() == 2


def test_resolution_cancels_a_queued_session_once(api):
    payload = fixture("alertmanager_v4.json")
    started = post(api, "alertmanager", payload).json()["sessions"][0]
    resolved = copy.deepcopy(payload)
    resolved["status"] = "resolved"
    resolved["alerts"] = [{**payload["alerts"][0], "status": "resolved", "endsAt": "2026-11-23T10:40:07.125Z"}]
    body = post(api, "alertmanager", resolved).json()
    assert body == {"sessions": [], "ignored": [], "resolved": [
        {"fingerprint": started["fingerprint"], "session_id": started["session_id"], "action": "cancelled"}]}
    session = AlertSession.objects.get(id=started["session_id"])
    assert session.status == "cancelled"
    assert "resolved in alertmanager at 2026-11-23T10:40:07.125Z" in session.error_message
    [(content, metadata)] = resolved_events(session.id)
    assert metadata == {"source": "alertmanager", "fingerprint": started["fingerprint"],
                        "resolved_at": "2026-11-23T10:40:07.125Z", "action": "cancelled", "related": False}
    again = post(api, "alertmanager", resolved).json()["resolved"]
    assert again[0]["action"] == "already_resolved"
    assert len(resolved_events(session.id)) == 1


@pytest.mark.parametrize("status", ["in_progress", "completed"])
def test_resolution_annotates_a_running_or_finished_session_without_stopping_it(api, status):
    payload = fixture("alertmanager_v4.json")
    started = post(api, "alertmanager", payload).json()["sessions"][1]
    AlertSession.objects.filter(id=started["session_id"]).update(status=status)
    resolved = {**payload, "status": "resolved",
                "alerts": [{**payload["alerts"][1], "status": "resolved", "endsAt": "2026-11-23T10:50:00Z"}]}
    body = post(api, "alertmanager", resolved).json()
    assert body["resolved"][0]["action"] == "annotated"
    assert AlertSession.objects.get(id=started["session_id"]).status == status
    [(content, _)] = resolved_events(started["session_id"])
    assert content.startswith("Alert resolved in alertmanager at 2026-11-23T10:50:00Z.")
    assert ("investigation continues" in content) == (status == "in_progress")


def test_a_repeated_notification_joins_the_session_already_on_the_alert(api):
    first = post(api, "alertmanager", fixture("alertmanager_v4.json")).json()["sessions"]
    again = post(api, "alertmanager", fixture("alertmanager_v4.json")).json()["sessions"]
    assert [s["session_id"] for s in again] == [s["session_id"] for s in first]
    assert [(s["deduplicated"], s["related"]) for s in again] == [(True, False), (True, False)]
    assert AlertSession.objects.count() == 2
    assert AlertSession.objects.get(id=first[0]["session_id"]).occurrence_count == 2  # the first and its repeat


def test_a_flapping_alert_gets_each_resolution_recorded_once(api):
    payload = fixture("alertmanager_v4.json")
    started = post(api, "alertmanager", payload).json()["sessions"][0]
    AlertSession.objects.filter(id=started["session_id"]).update(status="in_progress")
    for ended in ("2026-11-23T10:40:00Z", "2026-11-23T10:40:00Z", "2026-11-23T10:55:00Z"):
        post(api, "alertmanager", {**payload, "status": "resolved",
                                   "alerts": [{**payload["alerts"][0], "status": "resolved", "endsAt": ended}]})
    times = [metadata["resolved_at"] for _, metadata in resolved_events(started["session_id"])]
    assert times == ["2026-11-23T10:40:00Z", "2026-11-23T10:55:00Z"]


def test_a_correlated_alert_joins_the_group_session_and_its_resolution_only_annotates(api, tmp_path):
    write_config(tmp_path, tarsy={"agent_chains": {"kubernetes": {
        "alert_types": ["kubernetes"], "correlation": {"labels": ["alert.labels.namespace"]},
        "stages": [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}]}}})
    payload = fixture("alertmanager_v4.json")
    lead, joined = post(api, "alertmanager", payload).json()["sessions"]
    assert joined["session_id"] == lead["session_id"] and (joined["related"], joined["deduplicated"]) == (True, False)
    resolved = {**payload, "status": "resolved",
                "alerts": [{**payload["alerts"][1], "status": "resolved", "endsAt": "2026-11-23T10:45:00Z"}]}
    [answer] = post(api, "alertmanager", resolved).json()["resolved"]
    assert (answer["session_id"], answer["action"]) == (lead["session_id"], "annotated")
    assert AlertSession.objects.get(id=lead["session_id"]).status == "pending"  # its own alert still fires
    [(content, _)] = resolved_events(lead["session_id"])
    assert content.startswith("A related alert resolved in alertmanager")


def test_group_mode_starts_one_session_for_the_group(api, tmp_path):
    write_config(tmp_path, tarsy={"intake": {"alertmanager": {"session_per": "group"}}})
    body = post(api, "alertmanager", fixture("alertmanager_v4.json")).json()
    [entry] = body["sessions"]
    session = AlertSession.objects.get(id=entry["session_id"])
    stored = json.loads(session.alert_data)
    assert [a["labels"]["pod"] for a in stored["alerts"]] == ["checkout-7d9f8b6c5-x2lqp", "ledger-5b6c9d7f4-9kq2z"]
    assert entry["fingerprint"].startswith("alertmanager:group:")
    assert session.runbook_url == ""  # the common runbook's host is not an allowed runbook domain
    group_resolved = {**fixture("alertmanager_v4.json"), "status": "resolved"}
    assert post(api, "alertmanager", group_resolved).json()["resolved"][0]["action"] == "cancelled"


def test_rules_map_labels_to_alert_type_severity_and_runbook(api, tmp_path):
    write_config(tmp_path, tarsy={
        "agent_chains": {"payments": {"alert_types": ["payments"],
                                      "stages": [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}]}},
        "intake": {"alertmanager": {
            "severity_map": {"warning": "high"},
            "rules": [{"match": {"namespace": "payments", "container": "ledger"}, "alert_type": "payments",
                       "runbook": "https://github.com/example-org/runbooks/blob/main/ledger.md"},
                      {"match": {"namespace": "payments"}, "severity": "info"}]}}})
    body = post(api, "alertmanager", fixture("alertmanager_v4.json")).json()
    checkout, ledger = (AlertSession.objects.get(id=s["session_id"]) for s in body["sessions"])
    assert (checkout.alert_type, checkout.severity) == ("kubernetes", "info")
    assert (ledger.alert_type, ledger.severity, ledger.runbook_url) == (
        "payments", "high", "https://github.com/example-org/runbooks/blob/main/ledger.md")


@pytest.mark.parametrize("change, field", [
    ({"version": "3"}, "version"),
    ({"alerts": []}, "alerts"),
    ({"alerts": None}, "alerts"),
    ({"status": "pending"}, "status"),
    ({"alerts": [{"status": "firing", "labels": {"alertname": 7}}]}, "alerts.0.labels.alertname"),
    ({"alerts": [{"status": "firing", "labels": {}}]}, "alerts.0.labels"),
])
def test_malformed_alertmanager_payload_is_a_400_naming_the_field(api, change, field):
    response = post(api, "alertmanager", {**fixture("alertmanager_v4.json"), **change})
    assert response.status_code == 400, response.content
    assert field in response.json()["detail"]
    assert not AlertSession.objects.exists()


@pytest.mark.parametrize("body", [[], "firing", 3])
def test_a_body_that_is_not_an_object_is_a_400(api, body):
    response = post(api, "alertmanager", body)
    assert response.status_code == 400
    assert response.json()["detail"] == {"body": ["Expected a JSON object."]}


def test_a_refused_alert_refuses_the_whole_delivery_with_its_position(api):
    payload = fixture("alertmanager_v4.json")
    payload["alerts"][1]["annotations"]["description"] = "x" * (1024 * 1024 + 1)
    response = post(api, "alertmanager", payload)
    assert response.status_code == 413
    assert response.json()["error"].startswith("alert 1: alert data exceeds")
    assert not AlertSession.objects.exists()


def test_webhooks_take_json_only(api):
    response = api.post("/api/v1/alerts/alertmanager", data="version=4", content_type="text/plain")
    assert response.status_code == 415


# ---- shared secrets and the auth mode ---------------------------------------------------------------------------

@pytest.fixture
def alertmanager_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("TARSY_AM_SECRET", "am-shared-secret")
    write_config(tmp_path, tarsy={"intake": {"alertmanager": {"secret_env": "TARSY_AM_SECRET"}}})


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", "Token am-shared-secret", "Bearer "])
def test_alertmanager_with_a_secret_refuses_other_credentials_with_401(api, alertmanager_secret, authorization):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    response = post(api, "alertmanager", fixture("alertmanager_v4.json"), **headers)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="alertmanager"'
    assert not AlertSession.objects.exists()


def test_alertmanager_secret_admits_a_remote_sender_in_auth_mode_none(alertmanager_secret):
    from rest_framework.test import APIClient

    remote = APIClient(REMOTE_ADDR="10.1.2.3")
    assert post(remote, "alertmanager", fixture("alertmanager_v4.json")).status_code == 401
    response = post(remote, "alertmanager", fixture("alertmanager_v4.json"),
                    HTTP_AUTHORIZATION="Bearer am-shared-secret")
    assert response.status_code == 202, response.content
    assert AlertSession.objects.filter(author="alertmanager").count() == 2


def test_without_a_secret_the_auth_mode_applies(tmp_path):
    from rest_framework.test import APIClient

    remote = APIClient(REMOTE_ADDR="10.1.2.3")
    response = post(remote, "alertmanager", fixture("alertmanager_v4.json"))
    assert response.status_code == 403
    assert "loopback" in response.json()["detail"]


def test_in_token_mode_a_webhook_without_a_secret_needs_an_api_token(tmp_path):
    from io import StringIO

    from django.core.management import call_command
    from rest_framework.test import APIClient

    write_config(tmp_path, tarsy={"system": {"auth": {"mode": "token"}}})
    out = StringIO()
    call_command("create_api_token", "grafana-prod", stdout=out)
    anonymous = post(APIClient(REMOTE_ADDR="10.1.2.3"), "grafana", fixture("grafana.json"))
    assert anonymous.status_code == 401
    client = APIClient(REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION=f"Token {out.getvalue().strip()}")
    response = post(client, "grafana", fixture("grafana.json"))
    assert response.status_code == 202, response.content
    assert AlertSession.objects.get(id=response.json()["sessions"][0]["session_id"]).author == "grafana-prod"


def test_a_secret_named_but_not_set_refuses_with_503(api, tmp_path, monkeypatch):
    monkeypatch.delenv("TARSY_AM_SECRET", raising=False)
    write_config(tmp_path, tarsy={"intake": {"alertmanager": {"secret_env": "TARSY_AM_SECRET"}}})
    response = post(api, "alertmanager", fixture("alertmanager_v4.json"), HTTP_AUTHORIZATION="Bearer ")
    assert response.status_code == 503
    assert not AlertSession.objects.exists()


def test_a_disabled_source_is_a_404(api, tmp_path):
    write_config(tmp_path, tarsy={"intake": {"grafana": {"enabled": False}}})
    response = post(api, "grafana", fixture("grafana.json"))
    assert response.status_code == 404
    assert response.json()["error"] == "grafana intake is disabled"


# ---- Grafana ----------------------------------------------------------------------------------------------------

def test_grafana_alert_becomes_a_session_with_its_links(api):
    response = post(api, "grafana", fixture("grafana.json"))
    assert response.status_code == 202, response.content
    [entry] = response.json()["sessions"]
    session = AlertSession.objects.get(id=entry["session_id"])
    assert (session.fingerprint, session.severity, session.author) == ("grafana:b3f1c2d4e5a69788", "warning", "grafana")
    assert session.runbook_url == "https://raw.githubusercontent.com/example-org/runbooks/main/high-cpu.md"
    stored = json.loads(session.alert_data)["alert"]
    assert stored["dashboardURL"] == "https://grafana.example.com/d/rYdddlPWk?orgId=1"
    assert stored["values"] == {"A": 93.4, "C": 1}


def test_grafana_payload_with_an_alertmanager_version_is_refused(api):
    response = post(api, "grafana", {**fixture("grafana.json"), "version": "4"})
    assert response.status_code == 400
    assert response.json()["error"] == "unsupported grafana webhook version '4'"


# ---- PagerDuty --------------------------------------------------------------------------------------------------

def test_pagerduty_triggered_incident_with_a_valid_signature_starts_a_session(api, pagerduty_secret):
    response = signed_post(api, fixture("pagerduty_incident_triggered.json"))
    assert response.status_code == 202, response.content
    [entry] = response.json()["sessions"]
    session = AlertSession.objects.get(id=entry["session_id"])
    assert (session.fingerprint, session.severity, session.author) == ("pagerduty:PGR0VU2", "high", "pagerduty")
    stored = json.loads(session.alert_data)
    assert stored["incident"]["title"] == "Checkout API error rate above 5%"
    assert stored["incident"]["html_url"] == "https://acme.pagerduty.com/incidents/PGR0VU2"


@pytest.mark.parametrize("signature", ["", "v1=" + "0" * 64, "sha256=abc", "v0=deadbeef"])
def test_pagerduty_invalid_signature_is_a_401_and_nothing_is_stored(api, pagerduty_secret, signature):
    raw = json.dumps(fixture("pagerduty_incident_triggered.json")).encode()
    response = api.post("/api/v1/alerts/pagerduty", data=raw, content_type="application/json",
                        HTTP_X_PAGERDUTY_SIGNATURE=signature)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert not AlertSession.objects.exists()


def test_pagerduty_signature_of_another_body_is_refused(api, pagerduty_secret):
    original = json.dumps(fixture("pagerduty_incident_triggered.json")).encode()
    tampered = original.replace(b"PGR0VU2", b"PGR0VU3")
    response = api.post("/api/v1/alerts/pagerduty", data=tampered, content_type="application/json",
                        HTTP_X_PAGERDUTY_SIGNATURE=pagerduty_signature(original, PD_SECRET))
    assert response.status_code == 401


def test_pagerduty_rotating_secrets_any_signature_matches(api, pagerduty_secret):
    raw = json.dumps(_dated("pagerduty_incident_triggered.json", timezone.now())).encode()
    header = f"{pagerduty_signature(raw, 'old-secret')},{pagerduty_signature(raw, PD_SECRET)}"
    response = api.post("/api/v1/alerts/pagerduty", data=raw, content_type="application/json",
                        HTTP_X_PAGERDUTY_SIGNATURE=header)
    assert response.status_code == 202


def test_pagerduty_resolved_incident_cancels_its_queued_session(api, pagerduty_secret):
    started = signed_post(api, fixture("pagerduty_incident_triggered.json")).json()["sessions"][0]
    response = signed_post(api, fixture("pagerduty_incident_resolved.json"))
    assert response.json()["resolved"] == [{"fingerprint": "pagerduty:PGR0VU2", "session_id": started["session_id"],
                                            "action": "cancelled"}]
    assert AlertSession.objects.get(id=started["session_id"]).status == "cancelled"


def test_pagerduty_rules_match_the_incident_service_and_priority(api, tmp_path, monkeypatch):
    monkeypatch.setenv("TARSY_PAGERDUTY_SECRET", PD_SECRET)
    write_config(tmp_path, tarsy={
        "agent_chains": {"api": {"alert_types": ["api"],
                                 "stages": [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}]}},
        "intake": {"pagerduty": {"secret_env": "TARSY_PAGERDUTY_SECRET", "severity_label": "priority",
                                 "rules": [{"match": {"service": "API Service", "team": "Engineering"},
                                            "alert_type": "api"}]}}})
    [entry] = signed_post(api, fixture("pagerduty_incident_triggered.json")).json()["sessions"]
    assert (entry["alert_type"], entry["severity"]) == ("api", "critical")  # P1 through the severity map


def test_pagerduty_other_event_types_are_acknowledged_and_ignored(api, pagerduty_secret):
    event = fixture("pagerduty_incident_triggered.json")
    event["event"]["event_type"] = "incident.acknowledged"
    response = signed_post(api, event)
    assert response.status_code == 202
    assert response.json() == {"sessions": [], "resolved": [], "ignored": ["incident.acknowledged"]}
    assert not AlertSession.objects.exists()


def test_pagerduty_incident_event_without_an_incident_is_a_400(api, pagerduty_secret):
    event = fixture("pagerduty_incident_triggered.json")
    event["event"]["data"] = {"type": "incident_note", "id": "P2LA89X"}
    response = signed_post(api, event)
    assert response.status_code == 400
    assert "event.data" in response.json()["detail"]


def test_a_runbook_url_outside_the_allow_list_is_set_aside_visibly(api):
    payload = fixture("alertmanager_v4.json")
    payload["alerts"] = [payload["alerts"][0]]
    payload["alerts"][0]["annotations"]["runbook_url"] = "https://wiki.internal.example/runbooks/crashloop?token=s3cr3t"
    body = post(api, "alertmanager", payload).json()
    (started,) = body["sessions"]
    (warning,) = started["warnings"]
    assert "wiki.internal.example" in warning and "not in system.runbooks.allowed_domains" in warning
    assert "s3cr3t" not in warning
    session = AlertSession.objects.get(id=started["session_id"])
    assert session.runbook_url == ""
    (event,) = TimelineEvent.objects.filter(session=session, event_type="error")
    assert event.content.startswith("Runbook not used: ") and event.metadata["warning"] is True
    timeline = api.get(f"/api/v1/sessions/{session.id}/timeline").json()
    assert any("Runbook not used" in e["content"] for e in timeline["events"])
    again = post(api, "alertmanager", payload).json()["sessions"][0]  # a repeat: said in the reply only
    assert again["deduplicated"] and again["warnings"] == [warning]
    assert TimelineEvent.objects.filter(session=session, event_type="error").count() == 1


def _dated(name: str, moment, event_id: str | None = None) -> dict:
    event = fixture(name)
    event["event"].update(occurred_at=moment.isoformat().replace("+00:00", "Z"), id=event_id or str(uuid.uuid4()))
    return event


@pytest.mark.parametrize("moment", ["2019-06-01T09:00:00Z", "future"], ids=["old", "future"])
def test_a_signed_pagerduty_event_outside_the_age_window_is_refused_and_changes_nothing(api, pagerduty_secret,
                                                                                          moment):
    started = signed_post(api, fixture("pagerduty_incident_triggered.json")).json()["sessions"][0]
    event = fixture("pagerduty_incident_resolved.json")
    event["event"]["occurred_at"] = (moment if moment != "future"
                                     else (timezone.now() + timedelta(minutes=10)).isoformat())
    response = signed_post(api, event, fresh=False)
    assert response.status_code == 401
    assert response.json()["detail"].startswith("stale or undated pagerduty event: the event occurred at ")
    assert AlertSession.objects.get(id=started["session_id"]).status == "pending"


def test_a_signed_pagerduty_event_without_a_date_is_refused(api, pagerduty_secret):
    event = fixture("pagerduty_incident_triggered.json")
    del event["event"]["occurred_at"]
    response = signed_post(api, event, fresh=False)
    assert response.status_code == 401
    assert response.json()["detail"] == "stale or undated pagerduty event: the event has no occurred_at"
    assert not AlertSession.objects.exists()


def test_the_age_window_is_configurable(api, tmp_path, monkeypatch):
    monkeypatch.setenv("TARSY_PAGERDUTY_SECRET", PD_SECRET)
    write_config(tmp_path, tarsy={"intake": {"pagerduty": {"secret_env": "TARSY_PAGERDUTY_SECRET",
                                                           "max_event_age": "1h"}}})
    half_an_hour_ago = _dated("pagerduty_incident_triggered.json", timezone.now() - timedelta(minutes=30))
    assert signed_post(api, half_an_hour_ago, fresh=False).status_code == 202


def test_a_repeated_signed_pagerduty_event_is_acknowledged_and_not_acted_on_again(api, pagerduty_secret):
    triggered = _dated("pagerduty_incident_triggered.json", timezone.now())
    first = signed_post(api, triggered, fresh=False).json()
    session_id = first["sessions"][0]["session_id"]
    resolved = _dated("pagerduty_incident_resolved.json", timezone.now())
    assert signed_post(api, resolved, fresh=False).json()["resolved"][0]["action"] == "cancelled"
    for event in (triggered, resolved):
        again = signed_post(api, event, fresh=False)
        assert again.status_code == 202
        assert again.json() == {"sessions": [], "resolved": [], "ignored": [f"repeated event {event['event']['id']}"]}
    assert list(AlertSession.objects.values_list("id", flat=True)) == [uuid.UUID(session_id)]
    assert len(resolved_events(session_id)) == 1


def test_a_signed_event_whose_delivery_failed_is_acted_on_when_sent_again(api, pagerduty_secret):
    event = _dated("pagerduty_incident_triggered.json", timezone.now())
    event["event"]["data"] = {"type": "incident_note", "id": "P2LA89X"}
    assert signed_post(api, event, fresh=False).status_code == 400
    event["event"]["data"] = fixture("pagerduty_incident_triggered.json")["event"]["data"]
    assert signed_post(api, event, fresh=False).status_code == 202  # same id: the refused delivery did not count
