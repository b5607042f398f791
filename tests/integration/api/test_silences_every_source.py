"""Silences match an alert's labels the same way whatever sent it (Alertmanager, Grafana, PagerDuty, a JSON
alert), and every intake endpoint says when an alert was silenced."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tarsy.models import AlertSession

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "webhooks"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def silence(api, **matchers) -> int:
    body = {"matchers": matchers, "reason": "maintenance CHG-1", "ends_at": (timezone.now() + timedelta(hours=1))
            .isoformat()}
    response = api.post("/api/v1/silences", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def deliver(api, source: str, body: dict) -> list[dict]:
    response = api.post(f"/api/v1/alerts/{source}", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 202, response.content
    return response.json()["sessions"]


def test_a_labels_matcher_silences_alertmanager_alerts_and_the_reply_says_so(api):
    made = silence(api, **{"labels.namespace": "payments"})
    sessions = deliver(api, "alertmanager", fixture("alertmanager_v4.json"))
    assert len(sessions) == 2
    for row in sessions:
        assert (row["status"], row["silenced_by"]) == ("silenced", made)
        assert AlertSession.objects.get(id=row["session_id"]).status == "silenced"


def test_a_labels_matcher_silences_grafana_alerts(api):
    made = silence(api, **{"labels.instance": "db-1:9100", "labels.team": "storage"})
    (row,) = deliver(api, "grafana", fixture("grafana.json"))
    assert (row["status"], row["silenced_by"]) == ("silenced", made)


def test_a_labels_matcher_silences_a_pagerduty_incident_by_its_service(api):
    made = silence(api, **{"labels.service": "API Service"})
    (row,) = deliver(api, "pagerduty", fixture("pagerduty_incident_triggered.json"))
    assert (row["status"], row["silenced_by"]) == ("silenced", made)


def test_a_labels_matcher_silences_a_json_alert_whether_its_labels_are_nested_or_top_level(api):
    silence(api, **{"labels.namespace": "payments"})
    nested = api.post("/api/v1/alerts", {"alert_type": "kubernetes",
                                         "data": {"labels": {"namespace": "payments", "pod": "a-1"}}}, format="json")
    flat = api.post("/api/v1/alerts", {"alert_type": "kubernetes",
                                       "data": {"namespace": "payments", "pod": "b-1"}}, format="json")
    assert nested.json()["status"] == flat.json()["status"] == "silenced"


def test_alerts_with_other_labels_are_not_silenced_and_the_reply_says_queued(api):
    silence(api, **{"labels.namespace": "shop"})
    sessions = deliver(api, "alertmanager", fixture("alertmanager_v4.json"))
    assert [(row["status"], row["silenced_by"]) for row in sessions] == [("queued", None)] * 2
    (row,) = deliver(api, "pagerduty", fixture("pagerduty_incident_triggered.json"))
    assert row["status"] == "queued"
