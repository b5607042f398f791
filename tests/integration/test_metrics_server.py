"""`manage.py serve_metrics`: web's counters and the session gauges on a port outside the auth proxy."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tarsy.management.commands.serve_metrics import metrics_app
from tarsy.services import sessions as session_service

pytestmark = [pytest.mark.services, pytest.mark.django_db]


def call(path: str) -> tuple[str, bytes]:
    seen = {}

    def start_response(status, headers):
        seen["status"] = status

    body = b"".join(metrics_app({"PATH_INFO": path, "REQUEST_METHOD": "GET"}, start_response))
    return seen["status"], body


def test_serves_the_session_gauges_and_process_counters():
    session_service.session_receive(data={"pod": "web-1"}, alert_type="kubernetes")
    status, body = call("/metrics")
    assert status == "200 OK"
    values = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for family in text_string_to_metric_families(body.decode()) for s in family.samples}
    assert values[("tarsy_sessions_queued", ())] == 1
    assert values[("tarsy_sessions", (("status", "pending"),))] == 1
    assert values[("tarsy_sessions_submitted_total", (("alert_type", "kubernetes"),))] >= 1


def test_other_paths_are_not_served():
    status, body = call("/admin/")
    assert status.startswith("404")
