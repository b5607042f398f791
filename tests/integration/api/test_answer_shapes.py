"""Answers in the shape a newcomer expects: posted objects come back as objects, webhook replies count
occurrences, the API docs describe each operation, a stale link in a browser is a page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "webhooks"


def test_alert_data_posted_as_an_object_comes_back_as_the_object(api):
    data = {"alertname": "DiskFull", "labels": {"instance": "db-1"}, "value": 97}
    session_id = api.post("/api/v1/alerts", data={"data": data}, format="json").json()["session_id"]
    assert api.get(f"/api/v1/sessions/{session_id}").json()["alert_data"] == data
    text_id = api.post("/api/v1/alerts", data={"data": "disk full on db-1"}, format="json").json()["session_id"]
    assert api.get(f"/api/v1/sessions/{text_id}").json()["alert_data"] == "disk full on db-1"


def test_webhook_replies_count_the_occurrences(api):
    body = json.loads((FIXTURES / "alertmanager_v4.json").read_text())
    post = lambda: api.post("/api/v1/alerts/alertmanager", data=json.dumps(body),  # noqa: E731
                            content_type="application/json").json()["sessions"]
    assert [s["occurrence_count"] for s in post()] == [1, 1]
    assert [(s["occurrence_count"], s["deduplicated"]) for s in post()] == [(2, True), (2, True)]


def test_every_api_operation_has_its_own_description():
    schema = Client().get("/api/schema/?format=json").json()
    descriptions = {f"{method.upper()} {path}": op.get("description", "")
                    for path, ops in schema["paths"].items() for method, op in ops.items()}
    assert not [name for name, text in descriptions.items() if "CSRF" in text or not text.strip()]
    assert descriptions["POST /api/v1/alerts"].startswith("Submit an alert")


def test_a_stale_session_link_is_a_page_for_a_browser_and_json_for_the_api():
    stale = "/sessions/00000000-0000-0000-0000-000000000000"
    page = Client().get(stale, HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
    assert "<h1>Not found</h1>" in page.content.decode() and 'href="/"' in page.content.decode()
    assert Client().get(stale).json()["error"] == "not_found"
    api = Client().get("/api/v1/nothing-here", HTTP_ACCEPT="text/html")
    assert api.status_code == 404 and api.json()["error"] == "not_found"
