"""Session titles end to end: set at intake (REST and webhooks, a chain's template), shown by the API, the
dashboard and Slack, searchable and filterable, and given to sessions stored before titles existed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from tarsy.models import AlertSession
from tarsy.slack.messages import session_message
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "webhooks"
STAGES = [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}]


def submit(api, data) -> str:
    response = api.post("/api/v1/alerts", data={"data": data}, format="json")
    assert response.status_code == 202, response.content
    return response.json()["session_id"]


def test_rest_alerts_are_titled_and_the_api_shows_searches_and_filters_by_title(api):
    disk = submit(api, {"alertname": "DiskFull", "instance": "db-1:9100"})
    submit(api, "pod web-1 CrashLoopBackOff\nrestarted 12 times")
    detail = api.get(f"/api/v1/sessions/{disk}").json()
    assert detail["title"] == "DiskFull (instance=db-1:9100)"
    rows = api.get("/api/v1/sessions").json()["results"]
    assert [r["title"] for r in rows] == ["pod web-1 CrashLoopBackOff", "DiskFull (instance=db-1:9100)"]
    assert [r["id"] for r in api.get("/api/v1/sessions?title=diskfull").json()["results"]] == [disk]
    assert [r["id"] for r in api.get("/api/v1/sessions?search=DiskFull").json()["results"]] == [disk]


def test_webhook_alerts_are_titled_by_alertname_and_labels(api):
    body = json.loads((FIXTURES / "alertmanager_v4.json").read_text())
    response = api.post("/api/v1/alerts/alertmanager", data=json.dumps(body), content_type="application/json")
    first = AlertSession.objects.get(id=response.json()["sessions"][0]["session_id"])
    assert first.title.startswith("KubePodCrashLooping (namespace=")
    assert "pod=checkout-7d9f8b6c5-x2lqp" in first.title


def test_a_chains_title_template_names_its_sessions(api, tmp_path):
    write_config(tmp_path, tarsy={"agent_chains": {"kubernetes": {
        "alert_types": ["kubernetes"], "title_template": "{service} down in {region}", "stages": STAGES}}})
    session_id = submit(api, {"service": "payments", "region": "eu-west-1", "alertname": "Down"})
    assert AlertSession.objects.get(id=session_id).title == "payments down in eu-west-1"


def test_dashboard_list_header_tab_and_slack_message_show_the_title(api):
    session_id = submit(api, {"alertname": "KubeNodeNotReady", "instance": "node-7"})
    client = Client(REMOTE_ADDR="127.0.0.1")
    listing = client.get("/").content.decode()
    assert "KubeNodeNotReady (instance=node-7)</a>" in listing
    page = client.get(f"/sessions/{session_id}").content.decode()
    assert "<title>KubeNodeNotReady (instance=node-7)" in page
    assert '<span class="session-title">KubeNodeNotReady (instance=node-7)</span>' in page
    text, blocks = session_message(AlertSession.objects.get(id=session_id), stage=None, chain_stages=1, url="")
    assert "KubeNodeNotReady (instance=node-7)" in text
    assert "KubeNodeNotReady (instance=node-7)" in blocks[0]["text"]["text"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(300)  # migrates the test database back and forth: minutes under parallel processes
def test_migration_titles_sessions_stored_before_titles_existed():
    executor = MigrationExecutor(connection)
    executor.migrate([("tarsy", "0012_citations")])
    try:
        old_apps = executor.loader.project_state([("tarsy", "0012_citations")]).apps
        OldSession = old_apps.get_model("tarsy", "AlertSession")
        stored = OldSession.objects.create(alert_data=json.dumps({"source": "pagerduty", "incident": {
            "title": "Checkout 5xx above 5%"}}), alert_type="kubernetes", chain_id="kubernetes")
        text = OldSession.objects.create(alert_data="disk full on db-1\nsecond line", alert_type="kubernetes",
                                         chain_id="kubernetes", deleted_at="2026-01-01T00:00:00Z")
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert AlertSession.all_objects.get(id=stored.id).title == "Checkout 5xx above 5%"
    assert AlertSession.all_objects.get(id=text.id).title == "disk full on db-1"
