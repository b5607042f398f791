"""Intake is rate limited per client address (TARSY_INTAKE_RATE): past the rate a 429 in the API's error shape
with Retry-After; another client, and the read endpoints, are unaffected."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from tarsy.models import AlertSession

pytestmark = [pytest.mark.django_db]

ALERTMANAGER = {"version": "4", "status": "firing", "receiver": "tarsy", "groupLabels": {}, "commonLabels": {},
                "commonAnnotations": {}, "externalURL": "", "groupKey": "{}", "alerts": []}


def _client(address: str) -> APIClient:
    return APIClient(REMOTE_ADDR=address)  # loopback addresses: admitted in auth mode none


def test_intake_past_the_rate_is_a_429_with_retry_after(settings):
    settings.TARSY_INTAKE_RATE = "3/minute"
    client = _client("127.0.0.31")
    statuses = [client.post("/api/v1/alerts", {"data": f"alert {n}"}, format="json").status_code for n in range(3)]
    assert statuses == [202] * 3
    refused = client.post("/api/v1/alerts", {"data": "one too many"}, format="json")
    assert refused.status_code == 429
    assert refused.json()["error"] == "throttled"
    assert refused.json()["detail"].startswith("Request was throttled.")
    assert 0 < int(refused.headers["Retry-After"]) <= 60
    webhook = client.post("/api/v1/alerts/alertmanager", json.dumps(ALERTMANAGER), content_type="application/json")
    assert webhook.status_code == 429  # one limit for every intake endpoint
    assert AlertSession.objects.count() == 3
    assert _client("127.0.0.32").post("/api/v1/alerts", {"data": "another client"}, format="json").status_code == 202
    assert client.get("/api/v1/sessions").status_code == 200


def test_an_empty_rate_means_no_limit(settings):
    settings.TARSY_INTAKE_RATE = ""
    client = _client("127.0.0.33")
    assert {client.post("/api/v1/alerts", {"data": f"a{n}"}, format="json").status_code for n in range(5)} == {202}
