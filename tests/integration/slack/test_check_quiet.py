"""Proactive checks in Slack: a run says nothing while it runs nor when it closes healthy or as a duplicate of an
open problem; a run that ends with a problem of its own gets its thread like any investigation."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tarsy.models import SlackThread
from tarsy.services import checks, sessions
from tarsy.services.queue import session_claim
from tests.support.slack import slack_section

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

TARSY = {"agent_chains": {"probe": {"stages": [{"name": "check", "agents": [{"name": "KubernetesAgent"}]}]}},
         "checks": [{"name": "db-up", "schedule": "* * * * *", "chain": "probe", "instruction": "Is the DB up?"}]}


def _ended_run(result: str, triage_status: str | None = None) -> str:
    session = checks.check_run(name="db-up")
    assert session_claim(session=session, worker_id="w1", now=timezone.now())
    fields = {"check_result": result, **({"triage_status": triage_status} if triage_status is not None else {})}
    sessions.session_set_status(session_id=session.id, status="completed", from_statuses=("in_progress",), **fields)
    return session.id


def test_only_a_check_run_with_a_problem_of_its_own_opens_a_slack_thread(scripted_config, fake_slack, slack_env):
    scripted_config({"KubernetesAgent": ["Final Answer: up"]},
                    tarsy={**TARSY, "slack": slack_section(fake_slack.url)})
    healthy = _ended_run("healthy", triage_status="")
    duplicate = _ended_run("duplicate", triage_status="resolved")
    problem = _ended_run("problem")
    assert set(SlackThread.objects.values_list("session_id", flat=True)) == {problem}
    assert healthy != problem != duplicate
