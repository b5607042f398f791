"""A Redis that restarts empty under threads-pool workers with investigations in flight, three times in a row:
the workers stay up, the tasks Redis lost are re-driven as soon as it is back (not after the orphan threshold),
every session completes within a minute of its return, and each iteration runs once."""

from __future__ import annotations

import time

import httpx
import pytest
from django.db.models import Count

from tarsy.models import TERMINAL_SESSION_STATUSES, AlertSession, LLMInteraction
from tests.support.processes import Proc, free_port, start_redis, start_server, wait_for
from tests.support.sessions import assert_no_duplicates

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

STEP = {"text": "Thought: gathering evidence.\nAction: none.none\nAction Input: {}", "latency_ms": 1500}
ITERATIONS = 3
SCRIPT = {"KubernetesAgent": [STEP] * (ITERATIONS - 1) + [{"text": "Thought: enough.\nFinal Answer: the pod lacks "
                                                                   "memory.", "latency_ms": 1500}],
          "executive_summary": ["The pod lacks memory."]}
SESSIONS = 16
THREADS = 6  # per worker, two workers: fewer than the iterations in flight, so some wait in Redis when it dies
ROUNDS = 3


def _submit(base: str, round_: int) -> list[str]:
    return [httpx.post(f"{base}/api/v1/alerts", json={"data": f"alert {round_}.{i}"}, timeout=10).json()["session_id"]
            for i in range(SESSIONS)]


def _wait_all_started(ids: list[str]) -> None:
    """Every session dispatched and iterations under way (more than the workers' threads: some wait in Redis)."""
    def started() -> bool:
        return (not AlertSession.objects.filter(id__in=ids, status="pending").exists()
                and LLMInteraction.objects.filter(session_id__in=ids).exists())

    try:
        wait_for(started, timeout=60, message="every session started")
    except AssertionError:
        states = sorted(AlertSession.objects.filter(id__in=ids).values_list("status", flat=True))
        raise AssertionError(f"not every session started: {states}") from None


def _all_finished(ids: list[str], workers: list[Proc]) -> bool:
    for proc in workers:
        assert proc.popen.poll() is None, f"a worker exited:\n{proc.log()[-4000:]}"
    return not AlertSession.objects.filter(id__in=ids).exclude(status__in=TERMINAL_SESSION_STATUSES).exists()


def _assert_each_iteration_ran_once(ids: list[str]) -> None:
    rows = list(AlertSession.objects.filter(id__in=ids))
    assert [r.status for r in rows] == ["completed"] * SESSIONS, [r.error_message for r in rows]
    for row in rows:
        assert_no_duplicates(row.id)
    calls = (LLMInteraction.objects.filter(session_id__in=ids, interaction_type="iteration")
             .values("execution_id", "iteration").annotate(n=Count("id")))
    assert len(calls) == SESSIONS * ITERATIONS
    assert {c["n"] for c in calls} == {1}  # no attempt re-ran or was superseded


@pytest.mark.timeout(420)
def test_threads_workers_survive_redis_restarting_empty_and_lost_tasks_run_within_a_minute(
        tmp_path, scripted_config, config_dir, worker, beat):
    """Default queue settings: orphan threshold 300 s, a sweep every 10 s."""
    scripted_config(SCRIPT, tarsy={"queue": {"max_concurrent_sessions": SESSIONS}})
    port = free_port()
    redis_proc = start_redis(tmp_path, port)
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0"}
    server, base = start_server(tmp_path, config_dir, **env)
    workers = [worker(pool="threads", concurrency=THREADS, **env), worker(pool="threads", concurrency=THREADS, **env)]
    beat(interval=10.0, **env)
    try:
        for round_ in range(ROUNDS):
            ids = _submit(base, round_)
            _wait_all_started(ids)
            redis_proc.kill()  # queued tasks are gone with it
            redis_proc.stop()
            time.sleep(1)
            redis_proc = start_redis(tmp_path, port)
            try:
                wait_for(lambda ids=ids: _all_finished(ids, workers), timeout=60, interval=0.5,
                         message="sessions to finish")
            except AssertionError as exc:
                states = sorted(AlertSession.objects.filter(id__in=ids).values_list("status", flat=True))
                raise AssertionError(f"round {round_}: {exc}: {states}") from None
            _assert_each_iteration_ran_once(ids)
        logs = "".join(proc.log() for proc in workers)
        assert logs.count("the broker restarted") == ROUNDS  # one re-drive per restart, whichever worker saw it
        assert "Unrecoverable error" not in logs
    finally:
        server.stop()
        redis_proc.stop()
