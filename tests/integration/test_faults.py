"""Fault injection: the outside world fails under running sessions; every session still ends terminal.

Servers a test kills are its own instances on their own ports; the machine's shared ones are untouched.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path

import httpx
import pytest
import redis
from django.conf import settings
from django.db import connection
from rest_framework.test import APIClient

from tarsy.models import (
    TERMINAL_SESSION_STATUSES,
    AgentExecution,
    AlertSession,
    CallStatus,
    LLMInteraction,
    MCPInteraction,
    Message,
    OutboxTask,
    TimelineEvent,
)
from tarsy.services.intake.alerts import session_submit
from tests.fakes.fake_openai import FakeOpenAI
from tests.support.configdir import scripted_provider, write_config
from tests.support.processes import Proc, child_env, free_port, start_redis, start_server, wait_for
from tests.support.sessions import PeakActiveSessions, assert_no_duplicates, wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

STEP = {"text": "Thought: gathering evidence.\nAction: none.none\nAction Input: {}", "latency_ms": 700}
SCRIPT = {"KubernetesAgent": [STEP, STEP, {"text": "Thought: enough.\nFinal Answer: the pod lacks memory."}],
          "executive_summary": ["The pod lacks memory."]}
# The deploy default runs iterations on threads (TARSy holds their time limits); prefork stays supported.
POOLS = ["prefork", "threads"]
RESILIENT = {"queue": {"orphan_threshold": "3s", "max_resumes": 5}, "defaults": {"iteration_timeout": "10s"}}


def _own_redis(tmp_path, port: int) -> Proc:
    return start_redis(tmp_path, port)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("pool", POOLS)
def test_redis_restart_with_sessions_pending_and_running(tmp_path, scripted_config, config_dir, worker, beat, pool):
    scripted_config(SCRIPT, tarsy={**RESILIENT, "queue": {**RESILIENT["queue"], "max_concurrent_sessions": 2}},
                    chunk_size=20)
    port = free_port()
    redis_proc = _own_redis(tmp_path, port)
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "TARSY_HARD_LIMIT_GRACE": "1"}
    server, base = start_server(tmp_path, config_dir, **env)
    procs = [server, worker(concurrency=2, pool=pool, **env), beat(interval=1.0, **env)]
    try:
        ids = [httpx.post(f"{base}/api/v1/alerts", json={"data": f"alert {i}"}, timeout=10).json()["session_id"]
               for i in range(4)]
        wait_for(lambda: AlertSession.objects.filter(id__in=ids, status="in_progress").exists(), timeout=60,
                 message="a session in progress")
        redis_proc.kill()  # queued tasks and in-flight messages are gone with it
        redis_proc.stop()
        time.sleep(2)
        redis_proc = _own_redis(tmp_path, port)

        def finished() -> bool:
            assert procs[1].popen.poll() is None, procs[1].log()[-4000:]  # the broker loss does not end the worker
            return not AlertSession.objects.filter(id__in=ids).exclude(status__in=TERMINAL_SESSION_STATUSES).exists()

        wait_for(finished, timeout=120, interval=0.5, message="sessions to finish")
        rows = wait_terminal(ids, 5, procs[1])
        assert [r.status for r in rows] == ["completed"] * 4, [r.error_message for r in rows]
    finally:
        server.stop()
        redis_proc.stop()


def _queued(port: int) -> list[tuple[str, list]]:
    """The tasks waiting in the test's queue on its own Redis, oldest first."""
    client = redis.Redis(host="127.0.0.1", port=port)
    messages = [json.loads(raw) for raw in reversed(client.lrange(settings.CELERY_TASK_DEFAULT_QUEUE, 0, -1))]
    return [(m["headers"]["task"], json.loads(base64.b64decode(m["body"]))[0]) for m in messages]


DECIDE = ("from django.db import transaction\n"
          "from tarsy.decisions import FinishSession, RunIteration, enact_on_commit\n"
          "with transaction.atomic():\n"
          "    enact_on_commit([RunIteration('e-1', 2, 5.0), FinishSession('s-1')])\n")


@pytest.mark.timeout(120)
def test_tasks_decided_while_the_broker_is_down_wait_in_the_outbox_until_a_relay_sends_them(tmp_path,
                                                                                               scripted_config,
                                                                                               config_dir):
    scripted_config(SCRIPT)
    port = free_port()
    broker = {"REDIS_URL": f"redis://127.0.0.1:{port}/0"}  # nothing listens there yet
    decide = Proc([sys.executable, "manage.py", "shell", "-c", DECIDE], child_env(config_dir, **broker),
                  tmp_path / "decide.log")
    assert decide.popen.wait(60) == 0, decide.log()
    decide.stop()
    assert "could not queue 2 task(s), left to the outbox relay" in decide.log()
    # The finish was written with its decision; the next iteration, sent first, is written once the send failed.
    assert list(OutboxTask.objects.order_by("id").values_list("kind", flat=True)) == ["FinishSession", "RunIteration"]

    server, _ = start_server(tmp_path, config_dir, **broker)  # the web process's relay keeps trying, backing off
    redis_proc = None
    try:
        wait_for(lambda: "outbox relay cannot send yet" in server.log(), timeout=20, message="the relay to try")
        time.sleep(6)  # a few more attempts while the broker stays away
        assert OutboxTask.objects.count() == 2
        redis_proc = start_redis(tmp_path, port)
        wait_for(lambda: not OutboxTask.objects.exists(), timeout=15, message="the outbox to drain")
        assert _queued(port) == [("tarsy.tasks.finish_session", ["s-1"]), ("tarsy.tasks.run_iteration", ["e-1", 2])]
        log = server.log()
        assert log.count("outbox relay cannot send yet") == 1, log  # one line per outage, no traceback per try
        assert log.count("outbox relay sent 2 task(s) left behind") == 1, log
        assert "Traceback" not in log, log
    finally:
        server.stop()
        if redis_proc:
            redis_proc.stop()


PRODUCTION_STEP = {"text": "Thought: gathering evidence.\nAction: none.none\nAction Input: {}", "latency_ms": 1500}
PRODUCTION_SCRIPT = {"KubernetesAgent": [PRODUCTION_STEP, PRODUCTION_STEP,
                                         {"text": "Thought: enough.\nFinal Answer: the pod lacks memory.",
                                          "latency_ms": 1500}],
                     "executive_summary": ["The pod lacks memory."]}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("pool", ["prefork", "threads"])
def test_a_redis_restart_under_default_settings_delays_no_session_past_a_minute(tmp_path, scripted_config,
                                                                                 config_dir, worker, beat, pool):
    """Production topology (web, two workers, beat; Redis persisting to its append-only file, as
    deploy/compose.yaml runs it) with the default queue settings (orphan_threshold 300 s, sweep every 10 s):
    Redis is killed for 5 s mid-run. Work decided while it is down waits in the outbox and goes out when it is
    back, so every session completes within a minute of its return, not after the orphan threshold."""
    scripted_config(PRODUCTION_SCRIPT)
    port = free_port()
    redis_options = ("--appendonly", "yes", "--dir", str(tmp_path))
    redis_proc = start_redis(tmp_path, port, *redis_options)
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0"}
    server, base = start_server(tmp_path, config_dir, **env)
    procs = [server, worker(pool=pool, concurrency=2, **env), worker(pool=pool, concurrency=2, **env),
             beat(interval=10.0, **env)]
    try:
        ids = [httpx.post(f"{base}/api/v1/alerts", json={"data": f"alert {i}"}, timeout=10).json()["session_id"]
               for i in range(10)]
        wait_for(lambda: AlertSession.objects.filter(id__in=ids, status="completed").exists()
                 and AlertSession.objects.filter(id__in=ids, status="in_progress").count() >= 3, timeout=90,
                 message="sessions completed and in progress")
        redis_proc.kill()
        redis_proc.stop()
        time.sleep(5)
        redis_proc = start_redis(tmp_path, port, *redis_options)

        def finished() -> bool:
            for proc in procs[1:3]:  # the broker loss does not end a worker
                assert proc.popen.poll() is None, proc.log()[-4000:]
            return not AlertSession.objects.filter(id__in=ids).exclude(status__in=TERMINAL_SESSION_STATUSES).exists()

        try:
            wait_for(finished, timeout=60, interval=0.5, message="sessions to finish")
        except AssertionError:
            states = sorted(AlertSession.objects.filter(id__in=ids).values_list("status", flat=True))
            raise AssertionError(f"not all terminal 60 s after Redis's return: {states}") from None
        rows = list(AlertSession.objects.filter(id__in=ids))
        assert [r.status for r in rows] == ["completed"] * 10, [r.error_message for r in rows]
        for row in rows:
            assert_no_duplicates(row.id)
            assert row.final_analysis == "the pod lacks memory."
        # A threads worker leaves the rows of what it sent to its relay's next pass (tarsy/outbox.py).
        wait_for(lambda: not OutboxTask.objects.exists(), timeout=15, message="the outbox to empty")
        logs = "".join(p.log() for p in procs)
        assert "left to the outbox relay" in logs  # the outage did catch work between commit and broker
    finally:
        server.stop()
        redis_proc.stop()


# ---- helpers shared by the scenarios below ------------------------------------------------------------------

TOOLS_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers" / "tools_server.py")


def _tools_config(extra_tarsy: dict | None = None) -> dict:
    tarsy = {"mcp_servers": {"tools": {"transport": {"type": "stdio", "command": sys.executable,
                                                     "args": [TOOLS_SERVER, "stdio"]}}},
             "agents": {"KubernetesAgent": {"mcp_servers": ["tools"]}}}
    tarsy.update(extra_tarsy or {})
    return tarsy


def _react(action: str, arguments: dict, **extra) -> dict:
    return {"text": f"Thought: use {action}.\nAction: {action}\nAction Input: {json.dumps(arguments)}", **extra}


def _final(text: str) -> dict:
    return {"text": f"Thought: enough.\nFinal Answer: {text}"}


@pytest.mark.timeout(150)
@pytest.mark.parametrize("pool", POOLS)
def test_worker_killed_during_a_tool_call_resumes_the_iteration(scripted_config, config_dir, worker, beat, pool):
    # The resumed attempt starts the tools server in a fresh worker process and waits out the 4 s hang again: on a
    # host at load 8 that took more than 8 s, and the attempt ended by its time limit instead of the tool's answer.
    write_config(config_dir, tarsy=_tools_config({"defaults": {"llm_provider": "scripted", "iteration_timeout": "20s"},
                                                  "queue": {"orphan_threshold": "20s"}}),
                 providers={"scripted": scripted_provider({
                     "KubernetesAgent": [_react("tools.hang", {"seconds": 4}), _final("the backend was stuck.")],
                     "executive_summary": ["stuck backend"]})})
    first = worker(concurrency=1, pool=pool, TARSY_HARD_LIMIT_GRACE="1")
    beat(interval=1.0)
    session = session_submit(alert_type="kubernetes", data="backend stuck")
    wait_for(lambda: TimelineEvent.objects.filter(session=session, event_type="mcp_tool_call",
                                                  status="streaming").exists(), timeout=60, message="a tool call")
    first.kill()
    survivor = worker(concurrency=1, pool=pool, TARSY_HARD_LIMIT_GRACE="1")
    (done,) = wait_terminal([session.id], 90, survivor)
    assert done.status == "completed", done.error_message
    assert done.final_analysis == "the backend was stuck."
    assert MCPInteraction.objects.filter(session=done, tool="hang", success=True).count() == 1
    assert TimelineEvent.objects.filter(session=done, event_type="mcp_tool_call").count() == 1
    assert_no_duplicates(done.id)


@pytest.mark.timeout(150)
@pytest.mark.parametrize("pool", POOLS)
def test_database_connections_terminated_mid_run(scripted_config, worker, beat, pool):
    step = {"text": "Thought: looking.\nAction: none.none\nAction Input: {}", "latency_ms": 400}
    scripted_config({"KubernetesAgent": [step, step, step, step, _final("all good.")],
                     "executive_summary": ["all good"]},
                    tarsy={"queue": {"orphan_threshold": "5s"}, "defaults": {"iteration_timeout": "10s"}},
                    chunk_size=10)
    procs = [worker(concurrency=2, pool=pool, TARSY_HARD_LIMIT_GRACE="1")]
    beat(interval=1.0)
    ids = [session_submit(alert_type="kubernetes", data=f"alert {i}").id for i in range(3)]
    wait_for(lambda: TimelineEvent.objects.filter(session_id__in=ids, iteration__gte=2).exists(), timeout=60,
             message="sessions in their second iteration")
    terminated = 0
    with connection.cursor() as cursor:
        for _ in range(3):  # a few rounds, so reconnecting workers are cut off again
            cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
            terminated += cursor.fetchone()[0]
            time.sleep(0.7)
    assert terminated >= 1  # the workers really lost their connections

    def finished() -> bool:
        # A threads worker waiting for its pool to replace the dead connections (psycopg's pool backs off between
        # failed checks) can pass an iteration's hard limit: the iteration runs again, the late attempt is fenced,
        # and the process goes on serving.
        assert procs[0].popen.poll() is None, procs[0].log()[-4000:]
        return not AlertSession.objects.filter(id__in=ids).exclude(status__in=TERMINAL_SESSION_STATUSES).exists()

    wait_for(finished, timeout=120, interval=0.5, message="sessions to finish")
    rows = wait_terminal(ids, 5, procs[0])
    assert [r.status for r in rows] == ["completed"] * 3, [r.error_message for r in rows]
    for row in rows:
        assert_no_duplicates(row.id)
        assert not TimelineEvent.objects.filter(session=row, metadata__internal=True).exists()


@pytest.mark.timeout(150)
def test_a_call_made_while_the_database_drops_its_connections_is_recorded_once_and_counted(config_dir, worker, beat):
    """The attempt's streamed LLM call is written when its tool call starts; the database connections die while
    the tool runs. The attempt reconnects when it writes next and completes: the call is recorded once, on the
    iteration that ran once, and its tokens count in the session's spend."""
    write_config(config_dir, tarsy=_tools_config({"defaults": {"llm_provider": "scripted", "iteration_timeout": "20s"},
                                                  "queue": {"orphan_threshold": "5s"}}),
                 providers={"scripted": {**scripted_provider({
                     "KubernetesAgent": [_react("tools.hang", {"seconds": 3}, usage={"input_tokens": 700,
                                                                                       "output_tokens": 50}),
                                         _final("the database blinked.")],
                     "executive_summary": ["database blink"]}, chunk_size=8),
                     "pricing": {"input_per_mtok": "1.00", "output_per_mtok": "2.00", "cached_input_per_mtok": "0.25",
                                 "thinking_per_mtok": "2.00", "as_of": "2026-11-01"}}})
    proc = worker(concurrency=1, TARSY_HARD_LIMIT_GRACE="1")
    beat(interval=1.0)
    session = session_submit(alert_type="kubernetes", data="database blink")
    wait_for(lambda: TimelineEvent.objects.filter(session=session, event_type="mcp_tool_call",
                                                  status="streaming").exists(), timeout=60, message="a tool call")
    with connection.cursor() as cursor:  # while the tool runs: the attempt's call is written, its end is not
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        assert cursor.fetchone()[0] >= 1
    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", done.error_message
    assert done.final_analysis == "the database blinked."
    calls = APIClient(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/sessions/{done.id}/interactions").json()
    first = [c for c in calls["llm_interactions"] if c["iteration"] == 1 and c["interaction_type"] == "iteration"]
    assert [(c["superseded"], c["total_tokens"], c["status"]) for c in first] == [(False, 750, "completed")], first
    stored = LLMInteraction.objects.filter(session=done)
    assert set(stored.values_list("status", flat=True)) == {CallStatus.COMPLETED}
    assert done.counters.total_tokens == sum(stored.values_list("total_tokens", flat=True))
    assert done.counters.cost_usd == sum(c.cost_usd for c in stored) > 0
    execution = AgentExecution.objects.get(session=done, agent_name="KubernetesAgent")
    assert execution.attempt == execution.iterations_completed  # no iteration ran twice
    assert execution.total_tokens == sum(stored.filter(execution=execution).values_list("total_tokens", flat=True))
    replies = Message.objects.filter(execution=execution, role="assistant", iteration=1)
    assert replies.count() == 1
    assert_no_duplicates(done.id)


@pytest.mark.timeout(240)
def test_workers_database_connections_terminated_twice_lose_no_llm_call_and_rerun_no_iteration(scripted_config,
                                                                                               worker, beat):
    """Twelve investigations thinking on a threads worker; the worker's database connections are ended twice
    (this test database's backends only). Every LLM call that started has its row, completed, with its tokens in
    the spend, and every iteration ran once."""
    step = {"text": "Thought: looking.\nAction: none.none\nAction Input: {}", "latency_ms": 1200,
            "usage": {"input_tokens": 300, "output_tokens": 20}}
    scripted_config({"KubernetesAgent": [step, step, step, _final("all good.")], "executive_summary": ["all good"]},
                    tarsy={"queue": {"orphan_threshold": "30s", "max_concurrent_sessions": 12},
                           "defaults": {"iteration_timeout": "30s"}},
                    chunk_size=10)
    proc = worker(concurrency=16, pool="threads")
    beat(interval=1.0)
    ids = [session_submit(alert_type="kubernetes", data=f"alert {i}").id for i in range(12)]
    wait_for(lambda: AgentExecution.objects.filter(session_id__in=ids, iterations_completed__gte=1).count() >= 10,
             timeout=90, message="investigations under way")
    terminated = 0
    with connection.cursor() as cursor:
        for _ in range(2):
            cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
            terminated += cursor.fetchone()[0]
            time.sleep(2.0)
    assert terminated >= 2
    rows = wait_terminal(ids, 150, proc)
    assert [r.status for r in rows] == ["completed"] * len(ids), [r.error_message for r in rows]
    assert proc.popen.poll() is None  # the worker carried on
    executions = list(AgentExecution.objects.filter(session_id__in=ids, stage__kind="investigation"))
    log = "\n".join(line for line in proc.log().splitlines()
                    if any(w in line for w in ("Error", "Retry", "retry", "resuming", "Traceback", "File ")))
    assert [e.attempt for e in executions] == [e.iterations_completed for e in executions], log[:12000]
    calls = LLMInteraction.objects.filter(session_id__in=ids)
    assert not calls.exclude(status=CallStatus.COMPLETED).exists(), [
        (c.execution_id, c.iteration, c.status, c.interaction_type, c.created_at.isoformat(), c.error_message,
         list(calls.filter(execution_id=c.execution_id).values_list("iteration", "status", "model", "created_at")))
        for c in calls.exclude(status=CallStatus.COMPLETED)]
    assert not calls.filter(superseded=True).exists()
    assert calls.filter(interaction_type="iteration").count() == sum(e.iterations_completed for e in executions)
    for row in rows:
        assert row.counters.total_tokens == sum(calls.filter(session=row).values_list("total_tokens", flat=True)) > 0
        assert_no_duplicates(row.id)


@pytest.mark.timeout(120)
def test_mcp_server_death_is_retried_once_then_reported(tmp_path, config_dir, worker):
    flag = tmp_path / "crashed-once"
    write_config(config_dir, tarsy=_tools_config({"defaults": {"llm_provider": "scripted"}}),
                 providers={"scripted": scripted_provider({
                     "KubernetesAgent": [_react("tools.crash_once", {"flag_path": str(flag)}),
                                         _react("tools.crash", {}),
                                         _final("the tool server is unstable.")],
                     "executive_summary": ["unstable tool server"]})})
    proc = worker(concurrency=1)
    session = session_submit(alert_type="kubernetes", data="tool server flapping")
    (done,) = wait_terminal([session.id], 90, proc)
    assert done.status == "completed", done.error_message
    recovered, crashed = MCPInteraction.objects.filter(session=done).order_by("created_at")
    assert recovered.success and recovered.result.startswith("recovered in")
    assert not crashed.success and crashed.error_message
    observation = Message.objects.filter(session=done, role="user", iteration=2).order_by("sequence_number").last()
    assert "ERROR" in observation.content
    assert TimelineEvent.objects.filter(session=done, event_type="mcp_tool_call", status="failed").count() == 1
    assert_no_duplicates(done.id)


def _openai_chunk(content: str) -> dict:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test",
            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}


@pytest.mark.timeout(150)
def test_rate_limit_storm_and_broken_stream_are_survived(config_dir, worker):
    fake = FakeOpenAI().start()
    try:
        fake.queue(
            *[{"status": 429, "message": "slow down"}] * 4,  # more than the provider's 3 retries
            {"events": [_openai_chunk("Thought: partial"), {"error": {"message": "stream broke",
                                                                      "type": "server_error"}}]},
            {"text": "Thought: recovered.\nFinal Answer: the service is healthy again.", "chunk_size": 12},
            {"text": "healthy again"},
        )
        write_config(config_dir, tarsy={"defaults": {"llm_provider": "gateway"},
                                        "agents": {"KubernetesAgent": {"mcp_servers": []}}},
                     providers={"gateway": {"type": "openai", "model": "gpt-test", "api_key_env": "FAKE_LLM_KEY",
                                            "base_url": f"{fake.url}/v1"}})
        proc = worker(concurrency=1, FAKE_LLM_KEY="k", TARSY_LLM_BACKOFF_BASE_S="0.05")
        session = session_submit(alert_type="kubernetes", data="flaky LLM gateway")
        (done,) = wait_terminal([session.id], 120, proc)
        assert done.status == "completed", (done.error_message, proc.log()[-3000:])
        assert done.final_analysis == "the service is healthy again."
        failed = LLMInteraction.objects.filter(session=done, success=False).order_by("created_at")
        assert failed.count() == 2
        assert "429" in failed[0].error_message or "rate" in failed[0].error_message.lower()
        errors = TimelineEvent.objects.filter(session=done, event_type="error")
        assert errors.count() == 2
        assert errors.order_by("created_at").first().metadata.get("code") == "rate_limit"
        assert_no_duplicates(done.id)
    finally:
        fake.stop()


@pytest.mark.timeout(240)
@pytest.mark.parametrize("pool", POOLS)
def test_burst_of_500_alerts_respects_the_concurrency_cap(scripted_config, worker, pool):
    scripted_config({"KubernetesAgent": [_final("fine.")], "executive_summary": ["fine"]},
                    tarsy={"queue": {"max_concurrent_sessions": 5}})
    procs = [worker(concurrency=4, pool=pool), worker(concurrency=4, pool=pool)]
    ids = [session_submit(alert_type="kubernetes", data=f"burst {i}").id for i in range(500)]
    with PeakActiveSessions() as sampled:
        rows = wait_terminal(ids, 200, procs[0])
    statuses = {r.status for r in rows}
    assert statuses == {"completed"}, statuses
    assert 1 <= sampled.peak <= 5
    assert AgentExecution.objects.filter(session_id__in=ids).count() == 500
