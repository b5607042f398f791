"""A threads-pool worker frozen (SIGSTOP) past its iterations' leases with investigations in flight, then resumed:
the other worker takes its iterations over once their leases run out, the woken one keeps running and runs what
the broker delivered to it meanwhile, and nothing its frozen attempts write lands."""

from __future__ import annotations

import signal
import time

import pytest

from tarsy.models import AgentExecution
from tarsy.services.intake.alerts import session_submit
from tests.support.processes import wait_for
from tests.support.sessions import assert_no_duplicates, wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

STEP = {"text": "Thought: gathering evidence.\nAction: none.none\nAction Input: {}", "latency_ms": 1500}
SCRIPT = {"KubernetesAgent": [STEP, STEP, {"text": "Thought: enough.\nFinal Answer: the pod lacks memory."}],
          "executive_summary": ["The pod lacks memory."]}
SESSIONS = 12
LEASE_S = 6 + 2  # iteration_timeout + TARSY_HARD_LIMIT_GRACE


@pytest.mark.timeout(240)
def test_a_worker_frozen_past_its_leases_loses_nothing_and_lands_no_late_write(scripted_config, worker, beat):
    scripted_config(SCRIPT, tarsy={"defaults": {"iteration_timeout": "6s"},
                                   "queue": {"max_concurrent_sessions": SESSIONS}}, chunk_size=20)
    env = {"TARSY_HARD_LIMIT_GRACE": "2"}
    frozen = worker(pool="threads", concurrency=16, **env)
    beat(interval=1.0, **env)
    ids = [session_submit(alert_type="kubernetes", data=f"alert {i}").id for i in range(SESSIONS)]
    running = AgentExecution.objects.filter(session_id__in=ids, lease_expires_at__isnull=False)
    wait_for(lambda: running.count() == SESSIONS, timeout=90, message="every session's iteration running")

    survivor = worker(pool="threads", concurrency=16, **env)
    frozen.kill(signal.SIGSTOP)  # with every iteration in flight, and a read of the broker pending
    frozen_at = time.monotonic()
    # Frozen until the other worker has taken every iteration over, once its lease ran out; meanwhile the broker
    # hands the frozen worker what its pending read asked for.
    wait_for(lambda: AgentExecution.objects.filter(session_id__in=ids, resume_count__gte=1).count() == SESSIONS,
             timeout=90, message="the other worker to take the iterations over")
    time.sleep(2)
    frozen.kill(signal.SIGCONT)

    rows = wait_terminal(ids, LEASE_S + 60 - (time.monotonic() - frozen_at), survivor)
    assert [r.status for r in rows] == ["completed"] * SESSIONS, [r.error_message for r in rows]
    for row in rows:
        assert row.final_analysis == "the pod lacks memory."
        assert_no_duplicates(row.id)  # one recorded call per iteration: the frozen attempts' were superseded
    log = frozen.log()
    assert frozen.popen.poll() is None, log[-4000:]  # woken, it kept serving
    assert "this process was suspended" in log
    assert "was taken over; its writes are dropped" in log
