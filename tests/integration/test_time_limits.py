"""Per-iteration time limits on a threads-pool worker, which drops Celery's own: nothing is forced into a
thread. A step wedged past its lease (it never heeds its deadline) is run again by another task, the wedged
attempt's late writes land nowhere (the claim's fence), and its process keeps serving."""

from __future__ import annotations

import pytest

from tarsy.models import LLMInteraction, TimelineEvent
from tarsy.services.intake.alerts import session_submit
from tests.support.processes import wait_for
from tests.support.sessions import assert_no_duplicates, wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LOOK = "Thought: look at the pod.\nAction: none.none\nAction Input: {}"
FINAL = "Thought: enough.\nFinal Answer: web-1 lacks its config map."
LIMITS = {"defaults": {"iteration_timeout": "2s"}, "queue": {"orphan_threshold": "3s"}}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["spin", "swallow"])
def test_a_step_wedged_past_its_lease_runs_again_and_its_late_writes_land_nowhere(tmp_path, scripted_config,
                                                                                  worker, beat, mode):
    once = tmp_path / "stalled-once"
    scripted_config({"KubernetesAgent": [{"text": LOOK, "stall": {"seconds": 8, "mode": mode,
                                                                   "once_file": str(once)}}, FINAL],
                     "executive_summary": ["web-1 lacks its config map."]}, tarsy=LIMITS)
    env = {"TARSY_HARD_LIMIT_GRACE": "2"}  # lease: 2 s + 2 s
    proc = worker(pool="threads", concurrency=4, **env)
    beat(interval=1.0, **env)
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    [done] = wait_terminal([session.id], 60, proc)

    assert done.status == "completed", done.error_message
    assert done.final_analysis == "web-1 lacks its config map."
    wait_for(lambda: "ended past its hard limit" in proc.log(), 30, message="the wedged thread to end")
    log = proc.log()
    assert "passed its hard time limit" in log
    assert "was taken over; its writes are dropped" in log
    assert proc.popen.poll() is None  # the process kept serving
    timeouts = TimelineEvent.objects.filter(session=done, event_type="error", status="timed_out")
    assert list(timeouts.values_list("content", flat=True)) == []  # the wedged attempt's timeout: fenced
    # Its LLM call was made and paid for: on the record, marked superseded, beside the re-run's.
    assert LLMInteraction.objects.filter(session=done, superseded=True).count() == 1
    assert_no_duplicates(done.id)
