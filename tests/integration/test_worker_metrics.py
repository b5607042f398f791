"""Metrics counted in a Celery worker's prefork children reach Prometheus through the worker's own endpoint."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from tests.support.processes import free_port, wait_for
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

SCRIPT = {
    "KubernetesAgent": [{"thinking": "Looking at the alert.",
                         "text": "Thought: The alert names a crash loop.\nFinal Answer: web-1 crashes because "
                                 "its config map is missing."}],
    "executive_summary": [{"text": "web-1 is crash-looping because of a missing config map."}],
}


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    samples = {}
    for family in text_string_to_metric_families(httpx.get(url, timeout=5).text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def total(samples, name: str, **labels) -> float:
    return sum(value for (n, got), value in samples.items()
               if n == name and all(dict(got).get(k) == v for k, v in labels.items()))


def test_worker_endpoint_serves_llm_iteration_and_queue_metrics_of_its_children(scripted_config, worker, tmp_path):
    scripted_config(SCRIPT)
    prom = tmp_path / "prom"  # not created: the worker makes it, as on a fresh tmpfs or emptyDir
    port = free_port()
    proc = worker(concurrency=2, PROMETHEUS_MULTIPROC_DIR=str(prom), TARSY_METRICS_PORT=str(port),
                  TARSY_METRICS_ADDR="127.0.0.1")
    url = f"http://127.0.0.1:{port}/metrics"

    def endpoint_up():
        try:
            return httpx.get(url, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(endpoint_up, timeout=45, message="the worker's metrics endpoint")
    except AssertionError:
        raise AssertionError(proc.log()) from None
    response = APIClient().post("/api/v1/alerts", {"data": "pod web-1 CrashLoopBackOff"}, format="json")
    [session] = wait_terminal([response.json()["session_id"]], timeout=60, proc=proc)
    assert session.status == "completed", session.error_message

    samples = scrape(url)
    assert total(samples, "tarsy_llm_calls_total", provider="scripted", outcome="success") == 2  # iteration, summary
    assert total(samples, "tarsy_llm_errors_total") == 0
    assert total(samples, "tarsy_llm_call_duration_seconds_count", provider="scripted") == 2
    assert total(samples, "tarsy_iteration_duration_seconds_count", strategy="react") >= 1
    assert total(samples, "tarsy_task_queue_wait_seconds_count", task="tarsy.tasks.run_iteration") >= 1
    assert total(samples, "tarsy_tasks_total", task="tarsy.tasks.run_iteration", outcome="success") >= 1
    assert total(samples, "tarsy_sessions_terminal_total", status="completed") == 1
    # The database-backed session gauges come from web's /metrics only, so a sum over targets counts them once.
    assert not any(name.startswith("tarsy_sessions_active") or name == "tarsy_sessions" for name, _ in samples)
    assert any(path.name.startswith("counter_") for path in prom.iterdir())  # the children wrote their values there
