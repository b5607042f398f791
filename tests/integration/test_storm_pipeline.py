"""Alert storms through the real pipeline: web processes, Celery workers, Redis and PostgreSQL, the scripted
provider. Repeats fold into one session, group members join their group's investigation (and its prompt),
and the queue runs by severity without starving the patient."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tarsy.models import AlertOccurrence, AlertSession, LLMInteraction, Message, TimelineEvent
from tarsy.services.intake.alerts import session_receive
from tests.support.processes import start_server, wait_for
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FINAL = "Thought: done.\nFinal Answer: {}"
LOOK = "Thought: let me look around.\nAction: none.none\nAction Input: {}"
CRASH = {"alertname": "KubePodCrashLooping", "namespace": "payments", "pod": "payments-api-7d9f",
         "description": "Pod is restarting 5 times / 10 minutes"}


def _chain(**extra):
    return {"kubernetes": {"alert_types": ["kubernetes"], **extra,
                           "stages": [{"name": "investigate", "agents": [{"name": "KubernetesAgent"}]}]}}


@pytest.mark.timeout(240)
def test_fifty_identical_alerts_from_threads_and_two_web_processes_make_one_session(
        scripted_config, worker, tmp_path, config_dir):
    scripted_config({"KubernetesAgent": [{"text": FINAL.format("payments-api crash-loops."), "latency_ms": 1500}],
                     "executive_summary": ["payments-api crash-loops."]})
    proc = worker()
    servers = [start_server(tmp_path, config_dir) for _ in range(2)]
    answers: list[httpx.Response] = []
    errors: list[BaseException] = []
    start = threading.Barrier(10)

    def post(thread: int) -> None:
        try:
            with httpx.Client(timeout=30) as client:
                start.wait()
                for n in range(5):
                    base = servers[(thread + n) % 2][1]
                    answers.append(client.post(f"{base}/api/v1/alerts", json={"alert_type": "kubernetes",
                                                                               "data": CRASH}))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=post, args=(i,)) for i in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        for server, _base in servers:
            server.stop()
    assert not errors, errors
    assert [a.status_code for a in answers] == [202] * 50, [a.text for a in answers if a.status_code != 202]
    bodies = [a.json() for a in answers]
    assert len({b["session_id"] for b in bodies}) == 1
    assert sum(b["deduplicated"] for b in bodies) == 49
    (done,) = wait_terminal([bodies[0]["session_id"]], 90, proc)
    assert done.status == "completed", done.error_message
    assert AlertSession.objects.count() == 1
    assert done.occurrence_count == 50
    assert AlertOccurrence.objects.filter(session=done, kind="occurrence").count() == 49


@pytest.mark.timeout(240)
def test_twenty_alerts_in_four_groups_make_four_investigations_that_see_their_related_alerts(
        scripted_config, worker):
    scripted_config({"KubernetesAgent": [{"text": LOOK, "latency_ms": 2500}, FINAL.format("one incident per app")],
                     "executive_summary": ["grouped"]},
                    tarsy={"agent_chains": _chain(correlation={"labels": ["namespace", "app"], "window": "10m"}),
                           "queue": {"max_concurrent_sessions": 4}})
    proc = worker(concurrency=4)
    apps = ["payments", "checkout", "search", "ledger"]
    leads = [session_receive(data={"alertname": "HighErrorRate", "namespace": "prod", "app": app},
                             alert_type="kubernetes").session.id for app in apps]
    # The first prompts are written before the first (2.5 s) LLM calls: what arrives now joins at iteration 2.
    wait_for(lambda: Message.objects.filter(session_id__in=leads).values("session_id").distinct().count() == 4,
             timeout=60, message="the four investigations' first LLM calls")
    receipts = [session_receive(data={"alertname": name, "namespace": "prod", "app": app, "pod": f"{app}-{i}"},
                                alert_type="kubernetes")
                for i, name in enumerate(["PodCrashLooping", "HighLatency", "Saturation", "QueueBacklog"])
                for app in apps]
    assert all(r.related and not r.deduplicated for r in receipts)
    sessions = wait_terminal(leads, 120, proc)
    assert AlertSession.objects.count() == 4
    for session in sessions:
        assert session.status == "completed", session.error_message
        app = session.group_key.split("app=")[1]
        assert session.related_count == 4
        related = AlertOccurrence.objects.filter(session=session, kind="related")
        assert {r.alert_data.count(f'"app": "{app}"') for r in related} == {1}
        # The running investigation took them in at its next iteration, and its timeline says so.
        events = list(TimelineEvent.objects.filter(session=session, event_type="related_alerts"))
        assert [(e.iteration, e.metadata["count"]) for e in events] == [(2, 4)], [
            (e.iteration, e.metadata, e.stage_id, e.execution_id) for e in events]
        second_call = LLMInteraction.objects.get(session=session, interaction_type="iteration", iteration=2)
        sent = "\n".join(m["content"] for m in second_call.conversation)
        assert all(f"{app}-{i}" in sent for i in range(4))
        assert not any(f"{other}-0" in sent for other in apps if other != app)


def _run_order(ids: dict[str, str]) -> list[str]:
    rows = AlertSession.objects.filter(id__in=ids.values()).order_by("started_at")
    names = {v: k for k, v in ids.items()}
    return [names[str(r.id)] for r in rows]


@pytest.mark.timeout(180)
def test_under_a_cap_of_one_a_critical_posted_last_runs_next(scripted_config, worker):
    scripted_config({"KubernetesAgent": [{"text": FINAL.format("seen"), "latency_ms": 1200}],
                     "executive_summary": ["seen"]}, tarsy={"queue": {"max_concurrent_sessions": 1}})
    proc = worker(concurrency=2)
    ids = {"blocker": str(session_receive(data={"alert": "blocker"}, severity="warning").session.id)}
    wait_for(lambda: AlertSession.objects.filter(id=ids["blocker"], status="in_progress").exists(), timeout=60,
             message="the first investigation to start")
    for severity in ("info", "warning", "high", "critical"):
        ids[severity] = str(session_receive(data={"alert": f"{severity} one"}, severity=severity).session.id)
    sessions = wait_terminal(list(ids.values()), 120, proc)
    assert all(s.status == "completed" for s in sessions), [s.error_message for s in sessions]
    assert _run_order(ids) == ["blocker", "critical", "high", "warning", "info"]


@pytest.mark.timeout(180)
def test_a_low_severity_alert_waiting_past_the_aging_threshold_runs_before_a_fresh_critical(
        scripted_config, worker):
    scripted_config({"KubernetesAgent": [{"text": FINAL.format("seen"), "latency_ms": 6000}],
                     "executive_summary": ["seen"]},
                    tarsy={"queue": {"max_concurrent_sessions": 1, "priority_aging": "1s"}})
    proc = worker(concurrency=2)
    ids = {"blocker": str(session_receive(data={"alert": "blocker"}, severity="critical").session.id)}
    wait_for(lambda: AlertSession.objects.filter(id=ids["blocker"], status="in_progress").exists(), timeout=60,
             message="the first investigation to start")
    ids["info"] = str(session_receive(data={"alert": "disk filling slowly"}, severity="info").session.id)
    time.sleep(4)  # past 3 x aging: the info alert now ranks above a critical that arrives now
    ids["critical"] = str(session_receive(data={"alert": "api down"}, severity="critical").session.id)
    assert AlertSession.objects.get(id=ids["blocker"]).status == "in_progress"
    sessions = wait_terminal(list(ids.values()), 120, proc)
    assert all(s.status == "completed" for s in sessions), [s.error_message for s in sessions]
    assert _run_order(ids) == ["blocker", "info", "critical"]
