"""A threads-pool worker's database connections follow the queries in flight, not the iterations: threads give
their pooled connection back while they wait on the LLM."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from tarsy.services.intake.alerts import session_submit
from tests.support.sessions import assert_no_duplicates, wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LOOK = {"text": "Thought: look again.\nAction: none.none\nAction Input: {}", "latency_ms": 1500}
FINAL = {"text": "Thought: enough.\nFinal Answer: node-3 is under disk pressure.", "latency_ms": 1500}
POOL_MAX = 4


def _connections_of_others(database: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                       [database])
        return cursor.fetchone()[0]


@pytest.mark.timeout(180)
def test_thirty_iterations_in_flight_on_a_pool_of_four_connections(scripted_config, worker):
    scripted_config({"KubernetesAgent": [LOOK, LOOK, FINAL], "executive_summary": ["disk pressure"]},
                    tarsy={"queue": {"max_concurrent_sessions": 100}})
    proc = worker(pool="threads", concurrency=30, TARSY_WORKER_DB_POOL_MAX=str(POOL_MAX))
    database = connection.settings_dict["NAME"]
    baseline = _connections_of_others(database)
    peak, stop = [0], threading.Event()

    def sample() -> None:
        try:
            while not stop.wait(0.1):
                peak[0] = max(peak[0], _connections_of_others(database) - baseline)
        finally:
            connection.close()  # this thread's own

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        ids = [session_submit(alert_type="kubernetes", data={"node": "node-3", "n": n}).id for n in range(30)]
        done = wait_terminal(ids, 150, proc)
    finally:
        stop.set()
        sampler.join()
    assert {s.status for s in done} == {"completed"}
    # The pool's connections, plus the one the worker's main thread may hold (it answers no task).
    assert 0 < peak[0] <= POOL_MAX + 1, peak[0]
    for session in done:
        assert_no_duplicates(session.id)
