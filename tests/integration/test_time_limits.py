"""Per-iteration time limits held by TARSy on a threads-pool worker, which drops Celery's own: a step that
never checks its deadline is stopped at its soft limit, or, when it swallows that too, its process stops at the
hard limit and the iteration runs again elsewhere."""

from __future__ import annotations

import time

import pytest

from tarsy.models import TimelineEvent
from tarsy.services.intake.alerts import session_submit
from tests.support.processes import wait_for
from tests.support.sessions import assert_no_duplicates, wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LOOK = "Thought: look at the pod.\nAction: none.none\nAction Input: {}"
FINAL = "Thought: enough.\nFinal Answer: web-1 lacks its config map."
LIMITS = {"defaults": {"iteration_timeout": "2s"}, "queue": {"orphan_threshold": "3s"}}


@pytest.mark.timeout(120)
def test_a_step_spinning_past_its_soft_limit_takes_the_timeout_path(scripted_config, worker):
    scripted_config({"KubernetesAgent": [{"text": LOOK, "stall": {"seconds": 60, "mode": "spin"}}, FINAL],
                     "executive_summary": ["web-1 lacks its config map."]}, tarsy=LIMITS)
    proc = worker(pool="threads", concurrency=4, TARSY_HARD_LIMIT_GRACE="30")
    started = time.monotonic()
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    [done] = wait_terminal([session.id], 50, proc)

    assert done.status == "completed", done.error_message
    assert time.monotonic() - started < 40  # not the 60 s the step would have spun
    timeouts = TimelineEvent.objects.filter(session=done, event_type="error", metadata__timeout=True)
    assert [e.content for e in timeouts] == ["Iteration 1 exceeded its time limit (2s)"]
    assert proc.popen.poll() is None  # a soft limit leaves the process serving
    assert_no_duplicates(done.id)


@pytest.mark.timeout(150)
def test_a_step_swallowing_its_soft_limit_stops_its_process_and_runs_again_elsewhere(tmp_path, scripted_config,
                                                                                     worker, beat):
    once = tmp_path / "stalled-once"
    scripted_config({"KubernetesAgent": [{"text": LOOK, "stall": {"seconds": 300, "mode": "swallow",
                                                                   "once_file": str(once)}}, FINAL],
                     "executive_summary": ["web-1 lacks its config map."]}, tarsy=LIMITS)
    env = {"TARSY_HARD_LIMIT_GRACE": "2"}
    first = worker(pool="threads", concurrency=4, **env)
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    wait_for(once.exists, 30, message="the first attempt to stall")
    second = worker(pool="threads", concurrency=4, **env)
    beat(interval=1.0, **env)

    assert wait_for(lambda: first.popen.poll(), 30, message="the stalled worker to exit") == 70
    [done] = wait_terminal([session.id], 60, second)
    assert done.status == "completed", done.error_message
    assert "passed its hard time limit" in first.log()
    assert second.popen.poll() is None
    assert_no_duplicates(done.id)
