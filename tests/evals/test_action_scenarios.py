"""The action scenarios as real sessions on a real `celery -A tarsy worker` (prefork: each worker process has its
own fixture servers, so the after-action state must cross processes), PostgreSQL and Redis: the runner approves
through the approvals service, an approved action runs and is verified against the changed fixtures, a failed
verification leads to the rollback the scenario expects, and the no-action scenarios propose nothing."""

from __future__ import annotations

import pytest

from agents.config import load_config
from evals.report import run_record
from evals.runconfig import APPROVER, write_run_config
from evals.runner import run
from evals.scenario import load_all, select
from tarsy.config import set_config
from tarsy.models import ActionProposal, AgentExecution
from tests.support.processes import start_worker

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.mark.timeout(300)
def test_action_reference_runs_pass_with_the_runner_approving_and_repeats_do_not_share_state(tmp_path):
    scenarios = load_all(select(["action-*"]))
    assert len(scenarios) >= 4
    plan = write_run_config(tmp_path / "config", scenarios, concurrency=4)
    set_config(load_config(plan.config_dir))
    worker = start_worker(tmp_path, plan.config_dir, concurrency=3, pool="prefork")
    try:
        results = run(plan, repeat=2, concurrency=4)
    finally:
        worker.stop()
    assert len(results) == 2 * len(scenarios)
    assert all(r.score.outcome == "pass" for r in results), [(r.scenario, r.score.failed) for r in results
                                                             if r.score.outcome != "pass"]
    for r in results:
        proposals = list(ActionProposal.objects.filter(session_id=r.session_id).order_by("created_at"))
        agents = set(AgentExecution.objects.filter(session_id=r.session_id).values_list("agent_name", flat=True))
        assert agents == {"KubernetesAgent", "Remediator"}, agents  # investigated read-only, then the action stage
        if r.scenario == "action-scale-zero-after-rollout":
            assert [(p.outcome, p.decided_by, p.arguments["scale"]) for p in proposals] == [("verified", APPROVER, 3)]
        elif r.scenario == "action-scale-up-not-verified-rollback":
            assert [(p.outcome, p.arguments["scale"]) for p in proposals] == [("not_verified", 6), ("verified", 2)]
            assert "FailedCreate" in proposals[0].evidence  # the read that showed it did not take
        else:
            assert proposals == [], r.scenario
        assert run_record(r)["actions"] == [{"tool": "kubernetes-server.resources_scale",
                                             "arguments": p.arguments, "ended": p.outcome} for p in proposals]
