"""The web process's connection pool (Django's own, psycopg 3): a connection the server ended while it sat in the
pool is never lent to a request."""

from __future__ import annotations

import time

import httpx
import psycopg
import pytest

from tests.support import processes

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

ALERT = {"alert_type": "kubernetes", "data": {"alertname": "KubePodCrashLooping", "namespace": "payments"}}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_alerts_are_accepted_after_the_database_ended_every_pooled_connection(scripted_config, tmp_path,
                                                                               config_dir):
    scripted_config({"KubernetesAgent": ["Thought: done.\nFinal Answer: ok."]})
    server, base = processes.start_server(tmp_path, config_dir, PGAPPNAME="tarsy-web-pool-test")  # libpq's own variable
    try:
        with httpx.Client(timeout=30) as client:
            assert client.post(f"{base}/api/v1/alerts", json=ALERT).status_code == 202
            with psycopg.connect(processes.test_database_url(), autocommit=True) as admin:
                ended = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = 'tarsy-web-pool-test'").fetchone()[0]
            assert ended >= 1  # the pool's idle connections
            time.sleep(0.5)
            answers = [client.post(f"{base}/api/v1/alerts", json=ALERT) for _ in range(5)]
    finally:
        server.stop()
    assert [a.status_code for a in answers] == [202] * 5, [a.text for a in answers]
