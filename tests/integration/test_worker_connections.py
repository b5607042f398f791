"""A threads-pool worker's database connections follow the queries in flight, not the iterations: threads give
their pooled connection back while they wait on the LLM."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection
from django.utils import timezone

from tarsy.models import AgentExecution, LLMInteraction
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


def _submitted_and_sampled(count: int, timeout: float, proc, measure: Callable[[], int],
                           interval: float) -> tuple[int, list]:
    """Submit `count` alerts and wait for their sessions to end, sampling `measure` every `interval` seconds
    meanwhile from a thread of its own: its peak and the ended sessions."""
    peak, stop = [0], threading.Event()

    def sample() -> None:
        try:
            while not stop.wait(interval):
                peak[0] = max(peak[0], measure())
        finally:
            connection.close()  # this thread's own

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        ids = [session_submit(alert_type="kubernetes", data={"node": "node-3", "n": n}).id for n in range(count)]
        done = wait_terminal(ids, timeout, proc)
    finally:
        stop.set()
        sampler.join()
    return peak[0], done


@pytest.mark.timeout(180)
def test_thirty_iterations_in_flight_on_a_pool_of_four_connections(scripted_config, worker):
    scripted_config({"KubernetesAgent": [LOOK, LOOK, FINAL], "executive_summary": ["disk pressure"]},
                    tarsy={"queue": {"max_concurrent_sessions": 100}})
    proc = worker(pool="threads", concurrency=30, TARSY_WORKER_DB_POOL_MAX=str(POOL_MAX))
    database = connection.settings_dict["NAME"]
    baseline = _connections_of_others(database)
    peak, done = _submitted_and_sampled(30, 150, proc, lambda: _connections_of_others(database) - baseline, 0.1)
    assert {s.status for s in done} == {"completed"}
    # The pool's connections, plus the one the worker's main thread may hold (it answers no task).
    assert 0 < peak <= POOL_MAX + 1, peak
    for session in done:
        assert_no_duplicates(session.id)


SLOW_MS = 4000  # each call; longer than the pool's timeout below, so a connection held over a call is seen
SLOW_LOOK = {**LOOK, "latency_ms": SLOW_MS}
SLOW_FINAL = {**FINAL, "latency_ms": SLOW_MS}


def _inflight() -> int:
    return AgentExecution.objects.filter(lease_expires_at__gt=timezone.now()).count()


@pytest.mark.timeout(240)
def test_forty_iterations_in_flight_on_four_connections_hold_none_while_the_model_answers(scripted_config, worker):
    """Forty threads each wait seconds on the model (two chunks a call, so the stop check between them runs
    mid-call, and an executive summary at the end) on a pool of four connections with a 3 s timeout: a
    thread that kept its connection over a call would make the others wait out the pool."""
    scripted_config({"KubernetesAgent": [SLOW_LOOK, SLOW_LOOK, SLOW_FINAL],
                     "executive_summary": [{"text": "disk pressure", "latency_ms": SLOW_MS}]},
                    chunk_size=32, tarsy={"queue": {"max_concurrent_sessions": 100},
                                          "defaults": {"iteration_timeout": "120s"}})
    proc = worker(pool="threads", concurrency=40, TARSY_WORKER_DB_POOL_MAX=str(POOL_MAX),
                  TARSY_WORKER_DB_POOL_TIMEOUT="3")
    peak, done = _submitted_and_sampled(40, 200, proc, _inflight, 0.2)
    ids = [s.id for s in done]
    assert {s.status for s in done} == {"completed"}
    assert peak >= 36, peak  # all of them at once, give or take the ones still being claimed
    failed = LLMInteraction.objects.filter(session_id__in=ids, success=False)
    assert not failed.exists(), sorted({m[:200] for m in failed.values_list("error_message", flat=True)})
    assert "couldn't get a connection" not in proc.log()
    for session in done:
        assert_no_duplicates(session.id)
