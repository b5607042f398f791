"""How a finished check run is closed (tarsy.services.checks.check_close), run by run: a problem stays one open
session across failing runs until someone resolves it; a failed run is a problem; a healthy run notes on the
open problem that the check passed again."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tarsy.models import AlertSession, TimelineEvent
from tarsy.services import checks, sessions, triage
from tarsy.services.queue import session_claim
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db]

TARSY = {"agent_chains": {"probe": {"stages": [{"name": "check", "agents": [{"name": "KubernetesAgent"}]}]}},
         "checks": [{"name": "db-up", "schedule": "* * * * *", "chain": "probe", "instruction": "Is the DB up?"}]}


def _finish(status: str, analysis: str) -> AlertSession:
    """A run through to its end as session_finish closes it: check_close, then the status with its fields."""
    run = checks.check_run(name="db-up")
    assert session_claim(session=run, worker_id="w1", now=timezone.now())
    close = checks.check_close(session=run, status=status, final_analysis=analysis)
    ended = sessions.session_set_status(session_id=run.id, status=status, from_statuses=("in_progress",),
                                        final_analysis=analysis, **close.fields)
    if close.duplicate_of is not None:
        checks.check_record_duplicate(session=ended, open_problem=close.duplicate_of)
    return ended


def test_failing_runs_share_one_open_problem_until_it_is_resolved(tmp_path):
    write_config(tmp_path, tarsy=TARSY)
    first = _finish("failed", "")  # a run that could not finish is a problem too
    second = _finish("completed", "The DB refuses connections.\nVERDICT: PROBLEM")
    assert (first.check_result, first.triage_status) == ("problem", "needs_review")
    assert (second.check_result, second.triage_status, second.resolution) == ("duplicate", "resolved", "duplicate")

    healthy = _finish("completed", "The DB answers.\nVERDICT: HEALTHY")
    assert (healthy.check_result, healthy.triage_status) == ("healthy", "")
    passed = TimelineEvent.objects.get(session_id=first.id, event_type="alert_resolved")
    assert "passed again" in passed.content and str(healthy.id) in passed.content

    triage.triage_act(session_id=first.id, actor="alice", action="resolve", resolution="actioned")
    third = _finish("completed", "Down again.\nVERDICT: PROBLEM")
    assert (third.check_result, third.triage_status) == ("problem", "needs_review")  # a new problem, a new session
    first.refresh_from_db()
    assert first.occurrence_count == 2
