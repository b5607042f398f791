"""`manage.py serve_metrics`: web's counters and the session gauges on a port outside the auth proxy."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tarsy.management.commands.serve_metrics import metrics_app
from tarsy.services.intake.alerts import session_receive

pytestmark = [pytest.mark.django_db]


def call(path: str) -> tuple[str, bytes]:
    seen = {}

    def start_response(status, headers):
        seen["status"] = status

    body = b"".join(metrics_app({"PATH_INFO": path, "REQUEST_METHOD": "GET"}, start_response))
    return seen["status"], body


def test_serves_the_session_gauges_and_process_counters():
    session_receive(data={"pod": "web-1"}, alert_type="kubernetes")
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


def test_a_worker_whose_metrics_port_is_taken_keeps_working(monkeypatch, caplog):
    import socket

    from tarsy.metrics import serve_worker_metrics

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setenv("TARSY_METRICS_PORT", str(taken.getsockname()[1]))
        monkeypatch.setenv("TARSY_METRICS_ADDR", "127.0.0.1")
        assert serve_worker_metrics(forking_pool=False) is None
    assert "worker metrics endpoint not started" in caplog.text


def test_no_port_configured_starts_no_endpoint(monkeypatch):
    from tarsy.metrics import serve_worker_metrics

    monkeypatch.delenv("TARSY_METRICS_PORT", raising=False)
    assert serve_worker_metrics(forking_pool=True) is None
