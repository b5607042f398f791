"""Silences and proactive checks on real processes: a worker investigates what is not silenced; a real `celery beat`
runs a check every minute, which closes healthy, then (its cluster fixture flipped to failing) opens one problem
for triage and folds the next failing run into it.

The check's cluster is tests/fakes/mcp_servers/pods_file_server.py, reading its pods from a file the test
rewrites; the demo investigator answers checks deterministically from what that server lists.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tarsy.models import AlertOccurrence, AlertSession, TriageActivity
from tarsy.services.checks import check_run
from tests.fakes.mcp_servers.pods_file_server import write_pods
from tests.support.configdir import write_config
from tests.support.processes import wait_for
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PODS_SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers" / "pods_file_server.py"
HEALTHY = [{"namespace": "payments", "name": "api-7f9c-abcde", "ready": "1/1", "status": "Running", "restarts": 0},
           {"namespace": "payments", "name": "worker-0", "ready": "1/1", "status": "Running", "restarts": 0},
           {"namespace": "shop", "name": "web-1", "ready": "0/1", "status": "CrashLoopBackOff", "restarts": 9}]
FAILING = [{**HEALTHY[0], "ready": "0/1", "status": "CrashLoopBackOff", "restarts": 4}, *HEALTHY[1:]]
MINUTE_RUN_S = 150  # the next minute boundary (≤ 60 s) plus a demo investigation on a cold worker


def _config(config_dir: Path, pods_file: Path) -> None:
    write_config(config_dir, tarsy={
        "defaults": {"llm_provider": "demo"},
        "mcp_servers": {"pods": {"transport": {"type": "stdio", "command": sys.executable,
                                               "args": [str(PODS_SERVER), str(pods_file)]}}},
        "agents": {"PodsAgent": {"mcp_servers": ["pods"]}},
        "agent_chains": {
            "pods-check": {"chat": {"enabled": False},
                           "stages": [{"name": "check", "agents": [{"name": "PodsAgent"}]}]},
            "kubernetes": {"alert_types": ["kubernetes"], "chat": {"enabled": False},
                           "stages": [{"name": "analysis", "agents": [{"name": "PodsAgent"}]}]},
        },
        "checks": [{"name": "payments-pods", "schedule": "* * * * *", "chain": "pods-check",
                    "instruction": "Verify every pod in namespace payments is running and ready, none restarted."}],
    })


def _runs() -> list[AlertSession]:
    return list(AlertSession.objects.filter(check_name="payments-pods").order_by("created_at"))


def _run_ended(count: int, proc) -> AlertSession:
    """The `count`-th run of the check, once it has ended."""
    def ended():
        runs = _runs()
        return runs[count - 1] if len(runs) >= count and runs[count - 1].is_terminal else None

    try:
        return wait_for(ended, timeout=MINUTE_RUN_S, interval=0.5, message=f"run {count} of the check")
    except AssertionError:
        raise AssertionError(f"runs: {[(r.status, r.check_result) for r in _runs()]}\n{proc.log()[-3000:]}") from None


@pytest.mark.timeout(480)
def test_a_check_on_beat_closes_healthy_then_opens_one_problem_for_its_failing_runs(tmp_path, config_dir, worker,
                                                                                   beat):
    pods_file = tmp_path / "pods.json"
    write_pods(pods_file, HEALTHY)
    _config(config_dir, pods_file)
    work = worker(concurrency=2, pool="threads")
    scheduler = beat()

    healthy = _run_ended(1, work)
    assert (healthy.status, healthy.check_result, healthy.triage_status) == ("completed", "healthy", "")
    assert "VERDICT: HEALTHY" in healthy.final_analysis and (healthy.alert_type, healthy.author) == (
        "scheduled_check", "scheduler")
    # Beat's schedule is proven by the first run; the next two are queued the way beat's task queues them, without
    # waiting for two more minute boundaries.
    scheduler.stop()

    write_pods(pods_file, FAILING)
    check_run(name="payments-pods")
    problem = _run_ended(2, work)
    assert (problem.status, problem.check_result, problem.triage_status) == ("completed", "problem", "needs_review")
    assert "api-7f9c-abcde" in problem.final_analysis and "VERDICT: PROBLEM" in problem.final_analysis

    check_run(name="payments-pods")
    repeat = _run_ended(3, work)
    assert (repeat.check_result, repeat.triage_status, repeat.resolution) == ("duplicate", "resolved", "duplicate")
    note = TriageActivity.objects.get(session=repeat).note
    assert note == f"The check's problem is still open in session {problem.id}."
    open_problems = AlertSession.objects.filter(check_name="payments-pods", triage_status="needs_review")
    assert [s.id for s in open_problems] == [problem.id]
    problem.refresh_from_db()
    assert problem.occurrence_count == 2
    assert AlertOccurrence.objects.get(session=problem).alert_data.startswith(f"Run {repeat.id} ")

    listed = APIClient(REMOTE_ADDR="127.0.0.1").get("/api/v1/checks").json()[0]
    assert listed["open_problem"]["id"] == str(problem.id)
    assert listed["last_result"] == "duplicate"


@pytest.mark.timeout(180)
def test_a_silence_suppresses_investigation_of_a_matching_alert_and_not_of_others(tmp_path, config_dir, worker):
    pods_file = tmp_path / "pods.json"
    write_pods(pods_file, HEALTHY)
    _config(config_dir, pods_file)
    api = APIClient(REMOTE_ADDR="127.0.0.1")
    made = api.post("/api/v1/silences", {"matchers": {"labels.namespace": "payments"}, "reason": "DB migration",
                                         "ends_at": "2999-01-01T00:00:00Z"}, format="json").json()
    work = worker(concurrency=2, pool="threads")

    def post(namespace: str) -> str:
        body = {"alert_type": "kubernetes", "data": {"labels": {"alertname": "PodCrashLooping",
                                                                 "namespace": namespace}}}
        return api.post("/api/v1/alerts", body, format="json").json()["session_id"]

    silenced_id, investigated_id = post("payments"), post("shop")
    investigated = wait_terminal([investigated_id], timeout=120, proc=work)[0]
    silenced = AlertSession.objects.get(id=silenced_id)
    assert (investigated.status, investigated.triage_status) == ("completed", "needs_review")
    assert investigated.stages.exists() and investigated.final_analysis
    assert (silenced.status, silenced.silenced_by_id, silenced.triage_status) == ("silenced", made["id"], "")
    assert not silenced.stages.exists() and not silenced.executions.exists() and silenced.started_at is None
