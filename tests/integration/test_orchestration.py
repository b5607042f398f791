"""Orchestration on real Celery worker processes, Redis and PostgreSQL, driven by the scripted provider."""

from __future__ import annotations

import signal
import time

import pytest

from tarsy.errors import Conflict
from tarsy.models import (
    AgentExecution,
    LLMInteraction,
    Message,
    Stage,
    TimelineEvent,
)
from tarsy.services.chats import chat_submit
from tarsy.services.intake.alerts import session_submit
from tarsy.services.sessions import session_cancel
from tests.support.processes import wait_for
from tests.support.sessions import PeakActiveSessions, assert_no_duplicates, wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FINAL = "Thought: done.\nFinal Answer: {}"


def _final(text: str, **extra) -> dict:
    return {"text": FINAL.format(text), **extra}


@pytest.mark.timeout(120)
def test_multi_stage_chain_passes_context_and_ends_with_last_stage_analysis(scripted_config, worker):
    scripted_config({
        "Collector": [_final("Collector found payments-api OOMKilled at 256Mi.")],
        "Reviewer": [_final("Reviewed: payments-api memory limit is too low; raise it to 512Mi.")],
        "executive_summary": ["payments-api is OOMKilled; raise its memory limit."],
    }, tarsy={
        "agents": {"Collector": {}, "Reviewer": {}},
        "agent_chains": {"two-step": {"alert_types": ["two-step"], "stages": [
            {"name": "collect", "agents": [{"name": "Collector"}]},
            {"name": "review", "agents": [{"name": "Reviewer"}]},
        ]}},
    })
    proc = worker()
    session = session_submit(alert_type="two-step", data={"pod": "payments-api", "reason": "OOMKilled"})
    (done,) = wait_terminal([session.id], 60, proc)
    assert done.status == "completed", done.error_message
    assert done.final_analysis == "Reviewed: payments-api memory limit is too low; raise it to 512Mi."
    assert done.executive_summary == "payments-api is OOMKilled; raise its memory limit."
    assert list(Stage.objects.filter(session=done).values_list("name", "status")) == [
        ("collect", "completed"), ("review", "completed")]
    review_call = LLMInteraction.objects.get(session=done, execution__agent_name="Reviewer")
    sent_user = next(m["content"] for m in review_call.conversation if m["role"] == "user")
    assert "Collector found payments-api OOMKilled at 256Mi." in sent_user
    assert "Analysis Result START" in sent_user
    assert LLMInteraction.objects.filter(session=done, interaction_type="executive_summary", success=True).exists()


def _parallel_config(scripted_config, policy: str, *, replicas: int = 1):
    stage = {"name": "investigate", "success_policy": policy}
    if replicas > 1:
        stage["agents"] = [{"name": "Replica"}]
        stage["replicas"] = replicas
    else:
        stage["agents"] = [{"name": "Healthy"}, {"name": "Broken"}]
    failing = {"error": {"message": "model unavailable", "code": "bad_request", "retryable": False}}
    scripted_config({
        "Healthy": [_final("Healthy agent: the node ran out of disk.")],
        "Broken": [failing],
        "Replica-1": [_final("Replica one: disk pressure on node-3.")],
        "Replica-2": [failing],
        "Replica-3": [_final("Replica three: disk pressure confirmed.")],
        "SynthesisAgent": ["Synthesis: disk pressure on node-3 evicts the pods."],
        "executive_summary": ["Disk pressure on node-3."],
    }, tarsy={
        "agents": {"Healthy": {}, "Broken": {"max_iterations": 2}, "Replica": {"max_iterations": 2}},
        "agent_chains": {"parallel": {"alert_types": ["parallel"], "stages": [stage]}},
    })


@pytest.mark.timeout(150)
@pytest.mark.parametrize("replicas", [1, 3], ids=["multi-agent", "replicas"])
def test_parallel_stage_with_any_policy_survives_one_failure_and_synthesizes(scripted_config, worker, replicas):
    _parallel_config(scripted_config, "any", replicas=replicas)
    proc = worker(concurrency=2)
    session = session_submit(alert_type="parallel", data="pods evicted on node-3")
    (done,) = wait_terminal([session.id], 90, proc)
    assert done.status == "completed", done.error_message
    stages = list(Stage.objects.filter(session=done).order_by("index"))
    assert [(s.kind, s.status) for s in stages] == [("investigation", "completed"), ("synthesis", "completed")]
    assert stages[0].parallel_type == ("replica" if replicas > 1 else "multi_agent")
    names = sorted(stages[0].executions.values_list("agent_name", "status"))
    if replicas > 1:
        assert names == [("Replica-1", "completed"), ("Replica-2", "failed"), ("Replica-3", "completed")]
    else:
        assert names == [("Broken", "failed"), ("Healthy", "completed")]
    assert done.final_analysis == "Synthesis: disk pressure on node-3 evicts the pods."
    synthesis_call = LLMInteraction.objects.get(session=done, interaction_type="synthesis")
    sent = "\n".join(m["content"] for m in synthesis_call.conversation)
    assert "disk pressure" in sent.lower() or "ran out of disk" in sent
    assert "model unavailable" in sent  # the failed agent's error is part of what synthesis weighs


@pytest.mark.timeout(120)
def test_parallel_stage_with_all_policy_fails_when_one_agent_fails(scripted_config, worker):
    _parallel_config(scripted_config, "all")
    proc = worker(concurrency=2)
    session = session_submit(alert_type="parallel", data="pods evicted on node-3")
    (done,) = wait_terminal([session.id], 90, proc)
    assert done.status == "failed"
    assert "Broken" in done.error_message
    assert list(Stage.objects.filter(session=done).values_list("kind", "status")) == [("investigation", "failed")]
    assert done.executive_summary == ""


@pytest.mark.timeout(150)
def test_worker_killed_mid_iteration_loses_nothing(scripted_config, worker, beat):
    slow = {"text": "Thought: still collecting evidence about the crash loop.\nAction: none.none\n"
                    "Action Input: {}", "latency_ms": 4000}
    scripted_config({"KubernetesAgent": [{"text": "Thought: first look.\nAction: none.none\nAction Input: {}"},
                                         slow, _final("web-1 crashes on a missing config map.")],
                     "executive_summary": ["web-1 lacks its config map."]},
                    tarsy={"defaults": {"iteration_timeout": "8s"},
                           "queue": {"orphan_threshold": "20s", "max_resumes": 3}},
                    chunk_size=8)
    first = worker(concurrency=1, TARSY_HARD_LIMIT_GRACE="1")
    beat(interval=1.0)
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")

    def streaming_iteration_two():
        return TimelineEvent.objects.filter(session=session, iteration=2, status="streaming").exists()

    wait_for(streaming_iteration_two, timeout=60, message="iteration 2 to stream")
    first.kill()  # SIGKILL the whole worker (parent and child) mid-stream
    survivor = worker(concurrency=1, TARSY_HARD_LIMIT_GRACE="1")
    (done,) = wait_terminal([session.id], 90, survivor)
    assert done.status == "completed", (done.error_message, survivor.log())
    assert done.final_analysis == "web-1 crashes on a missing config map."
    execution = AgentExecution.objects.get(session=done)
    assert execution.resume_count >= 1
    assert_no_duplicates(done.id)
    roles = list(Message.objects.filter(execution=execution).values_list("role", flat=True))
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]


@pytest.mark.timeout(150)
def test_never_more_than_the_concurrency_cap_in_progress(scripted_config, worker):
    scripted_config({"KubernetesAgent": [{"text": "Thought: a.\nAction: none.none\nAction Input: {}",
                                          "latency_ms": 300}, _final("done")],
                     "executive_summary": ["done"]},
                    tarsy={"queue": {"max_concurrent_sessions": 2}})
    procs = [worker(concurrency=2) for _ in range(3)]
    ids = [session_submit(alert_type="kubernetes", data=f"alert {i}").id for i in range(10)]
    with PeakActiveSessions() as sampled:
        sessions = wait_terminal(ids, 120, procs[0])
    assert all(s.status == "completed" for s in sessions), [s.error_message for s in sessions]
    assert 1 <= sampled.peak <= 2


@pytest.mark.timeout(90)
def test_cancel_during_a_streamed_reply_stops_within_seconds(scripted_config, worker):
    scripted_config({"KubernetesAgent": [{"text": "Thought: " + "looking closely " * 40, "latency_ms": 20000}]},
                    chunk_size=6)
    proc = worker(concurrency=1)
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    wait_for(lambda: TimelineEvent.objects.filter(session=session, status="streaming").exists(), timeout=60,
             message="a streaming event")
    started = time.monotonic()
    assert session_cancel(session_id=session.id).status == "cancelling"
    (done,) = wait_terminal([session.id], 10, proc)
    elapsed = time.monotonic() - started
    assert done.status == "cancelled"
    assert elapsed < 5, f"cancel took {elapsed:.1f}s"
    assert set(AgentExecution.objects.filter(session=done).values_list("status", flat=True)) == {"cancelled"}
    assert TimelineEvent.objects.filter(session=done, status="cancelled").exists()
    with pytest.raises(Conflict):
        session_cancel(session_id=session.id)


@pytest.mark.timeout(90)
def test_two_iteration_timeouts_in_a_row_fail_the_execution(scripted_config, worker):
    scripted_config({"KubernetesAgent": [{"text": "Thought: slow " * 20, "latency_ms": 5000}]},
                    tarsy={"defaults": {"iteration_timeout": "1s"}}, chunk_size=10)
    proc = worker(concurrency=1)
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    (done,) = wait_terminal([session.id], 60, proc)
    assert done.status == "failed"
    execution = AgentExecution.objects.get(session=done)
    assert execution.status == "failed"
    assert "consecutive timeouts" in execution.error_message
    timeouts = TimelineEvent.objects.filter(session=done, event_type="error", metadata__timeout=True)
    assert timeouts.count() == 2


@pytest.mark.timeout(90)
def test_session_timeout_ends_the_session_as_timed_out(scripted_config, worker, beat):
    looping = {"text": "Thought: still investigating, no action yet.", "latency_ms": 800}
    scripted_config({"KubernetesAgent": [looping]},
                    tarsy={"defaults": {"session_timeout": "3s", "max_iterations": 50}}, chunk_size=10)
    proc = worker(concurrency=1)
    beat(interval=1.0)
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    (done,) = wait_terminal([session.id], 45, proc)
    assert done.status == "timed_out", done.error_message
    assert "timeout" in done.error_message.lower()
    assert AgentExecution.objects.get(session=done).status == "timed_out"


@pytest.mark.timeout(150)
def test_chat_answers_questions_in_order_with_the_investigation_as_context(scripted_config, worker):
    scripted_config({
        "KubernetesAgent": [_final("web-1 crashes because config map web-config is missing key db.url.")],
        "executive_summary": ["web-1 lacks db.url."],
        "ChatAgent": [{"text": FINAL.format("Add db.url to web-config and restart web-1."), "latency_ms": 1500}],
    }, chunk_size=10)
    proc = worker(concurrency=2)
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    with pytest.raises(Conflict):  # not finished yet
        chat_submit(session_id=session.id, content="what now?", author="sre")
    (done,) = wait_terminal([session.id], 60, proc)
    assert done.status == "completed"

    _, first = chat_submit(session_id=done.id, content="How do I fix it?", author="sre")
    with pytest.raises(Conflict):  # one reply at a time
        chat_submit(session_id=done.id, content="And then?", author="sre")
    wait_for(lambda: Stage.objects.get(id=first.id).status == "completed", timeout=30, message="first reply")
    _, second = chat_submit(session_id=done.id, content="Anything else to check?", author="sre")
    wait_for(lambda: Stage.objects.get(id=second.id).status == "completed", timeout=30, message="second reply")

    first.refresh_from_db()
    assert first.final_analysis == "Add db.url to web-config and restart web-1."
    calls = list(LLMInteraction.objects.filter(session=done, interaction_type="chat").order_by("created_at"))
    assert len(calls) == 2
    first_sent = "\n".join(m["content"] for m in calls[0].conversation)
    assert "config map web-config is missing key db.url" in first_sent and "How do I fix it?" in first_sent
    second_sent = "\n".join(m["content"] for m in calls[1].conversation)
    assert "How do I fix it?" in second_sent and "Add db.url to web-config" in second_sent
    assert "Anything else to check?" in second_sent
    done.refresh_from_db()
    assert done.status == "completed"
    questions = list(TimelineEvent.objects.filter(session=done, event_type="user_question")
                     .order_by("created_at").values_list("content", flat=True))
    assert questions == ["How do I fix it?", "Anything else to check?"]


@pytest.mark.timeout(120)
def test_sigterm_lets_the_worker_finish_its_step_and_the_session_goes_on(scripted_config, worker):
    step = {"text": "Thought: looking.\nAction: none.none\nAction Input: {}", "latency_ms": 2500}
    scripted_config({"KubernetesAgent": [step, _final("finished after a worker restart.")],
                     "executive_summary": ["restart survived"]}, chunk_size=10)
    first = worker(concurrency=1)
    session = session_submit(alert_type="kubernetes", data="pod web-1 CrashLoopBackOff")
    wait_for(lambda: TimelineEvent.objects.filter(session=session, status="streaming").exists(), timeout=60,
             message="iteration 1 streaming")
    first.popen.send_signal(signal.SIGTERM)  # as an orchestrator stops a pod: warm shutdown of the main process
    first.popen.wait(30)
    execution = AgentExecution.objects.get(session=session)
    assert execution.iterations_completed == 1 and execution.lease_expires_at is None
    assert not TimelineEvent.objects.filter(session=session, status="streaming").exists()
    second = worker(concurrency=1)
    (done,) = wait_terminal([session.id], 60, second)
    assert done.status == "completed"
    assert AgentExecution.objects.get(session=done).resume_count == 0  # handed over, not recovered
    assert_no_duplicates(done.id)
