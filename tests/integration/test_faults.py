"""Fault injection: the outside world fails under running sessions; every session still ends terminal.

Servers a test kills are its own instances on their own ports; the machine's shared ones are untouched.
"""

from __future__ import annotations

import shutil
import time

import httpx
import pytest

from tarsy.models import AlertSession
from tests.support.processes import Proc, free_port, start_server, wait_for

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

STEP = {"text": "Thought: gathering evidence.\nAction: none.none\nAction Input: {}", "latency_ms": 700}
SCRIPT = {"KubernetesAgent": [STEP, STEP, {"text": "Thought: enough.\nFinal Answer: the pod lacks memory."}],
          "executive_summary": ["The pod lacks memory."]}
RESILIENT = {"queue": {"orphan_threshold": "3s", "max_resumes": 5}, "defaults": {"iteration_timeout": "10s"}}


def _own_redis(tmp_path, port: int) -> Proc:
    if not shutil.which("redis-server"):
        pytest.fail("redis-server is required for this test")
    args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = Proc(args, {"PATH": "/usr/bin:/bin:/usr/local/bin"}, tmp_path / f"redis-{port}.log")
    wait_for(lambda: b"Ready to accept" in (tmp_path / f"redis-{port}.log").read_bytes(), timeout=10,
             message="redis to start")
    return proc


@pytest.mark.timeout(180)
def test_redis_restart_with_sessions_pending_and_running(tmp_path, scripted_config, config_dir, worker, beat):
    scripted_config(SCRIPT, tarsy={**RESILIENT, "queue": {**RESILIENT["queue"], "max_concurrent_sessions": 2}},
                    chunk_size=20)
    port = free_port()
    redis_proc = _own_redis(tmp_path, port)
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "TARSY_HARD_LIMIT_GRACE": "1"}
    server, base = start_server(tmp_path, config_dir, **env)
    procs = [server, worker(concurrency=2, **env), beat(interval=1.0, **env)]
    try:
        ids = [httpx.post(f"{base}/api/v1/alerts", json={"data": f"alert {i}"}, timeout=10).json()["session_id"]
               for i in range(4)]
        wait_for(lambda: AlertSession.objects.filter(id__in=ids, status="in_progress").exists(), timeout=60,
                 message="a session in progress")
        redis_proc.kill()  # queued tasks and in-flight messages are gone with it
        redis_proc.stop()
        time.sleep(2)
        redis_proc = _own_redis(tmp_path, port)

        def all_terminal():
            rows = list(AlertSession.objects.filter(id__in=ids))
            return rows if all(r.is_terminal for r in rows) else None

        try:
            rows = wait_for(all_terminal, timeout=120, interval=0.5, message="sessions after the Redis restart")
        except AssertionError:
            states = list(AlertSession.objects.filter(id__in=ids).values_list("status", flat=True))
            raise AssertionError(f"{states}\n{procs[1].log()[-4000:]}") from None
        assert [r.status for r in rows] == ["completed"] * 4, [r.error_message for r in rows]
    finally:
        server.stop()
        redis_proc.stop()
