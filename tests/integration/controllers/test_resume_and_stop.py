"""A step re-run after a worker died mid-call leaves no duplicates; a cancelled session stops a step mid-stream."""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.utils import timezone

from controllers.base import StepStatus
from controllers.registry import controller_for
from tarsy.models import (
    AgentExecution,
    AlertSession,
    LLMInteraction,
    MCPInteraction,
    SessionCounters,
    Stage,
    TimelineEvent,
)
from tarsy.pipeline.execution_context import build_execution_context
from tarsy.pipeline.iteration import Claim, iteration_begin, iteration_recorder, iteration_run
from tarsy.services.sessions import session_set_status
from tests.support.processes import wait_for

from .conftest import (
    ALERT_DATA,
    ALERT_TYPE,
    interactions,
    messages,
    react_action,
    run_next,
    run_to_end,
    sent_roles,
    timeline,
)

FINAL = "web-1 crashes because configmap app-config is missing."
REACT_SCRIPT = [react_action("Check the pods.", "k8s.get_pods", '{"namespace": "prod"}'),
                "Thought: Clear now.\nFinal Answer: " + FINAL]
NATIVE_SCRIPT = [{"thinking": "Pods first.", "text": "Checking.",
                  "tool_calls": [{"name": "k8s.get_pods", "arguments": {"namespace": "prod"}, "id": "c1"}]},
                 {"text": FINAL}]
EXPECTED_EVENTS = {
    "react": ["llm_thinking", "llm_tool_call", "mcp_tool_call", "tool_result", "llm_thinking", "final_analysis"],
    "native-thinking": ["llm_thinking", "llm_response", "llm_tool_call", "mcp_tool_call", "tool_result",
                        "final_analysis"],
}
EXPECTED_ROLES = {"react": ["system", "user", "assistant", "user", "assistant"],
                  "native-thinking": ["system", "user", "assistant", "tool", "assistant"]}
WORKER_PATIENCE_S = 30  # the worker starts its own MCP server (~1 s) before it reaches the tool call


def _context(claim: Claim, iteration: int):
    return build_execution_context(claim.execution, iteration, iteration_recorder(claim, iteration))


@pytest.fixture
def task_queue():
    """This run's Celery queue, emptied afterwards: iterations that commit enqueue their follow-ups there."""
    yield
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(settings.CELERY_TASK_DEFAULT_QUEUE)


def _kill_worker_mid_tool_call(execution_id, hold: Path) -> None:
    """Run iteration 1 in a forked worker process and SIGKILL it while its MCP tool call is in flight."""
    connection.close()  # the worker opens its own database connection instead of sharing this socket
    hold.touch()
    pid = os.fork()
    if pid == 0:  # the worker: the iteration task's body, until it is killed
        try:
            iteration_run(execution_id, 1)
        except BaseException:  # noqa: BLE001 - shown in the test's output; the parent reports the early exit
            traceback.print_exc()
        finally:
            os._exit(1)
    reaped = False

    def tool_call_in_flight() -> bool:
        nonlocal reaped
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            reaped = True
            raise AssertionError(f"the worker exited (status {status}) before its tool call was in flight")
        return TimelineEvent.objects.filter(execution_id=execution_id, event_type="mcp_tool_call",
                                            status="streaming").exists()

    try:
        wait_for(tool_call_in_flight, WORKER_PATIENCE_S, message="the worker's tool call")
    finally:
        if not reaped:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        hold.unlink(missing_ok=True)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
@pytest.mark.parametrize("strategy", ["react", "native-thinking"])
def test_a_step_rerun_after_the_worker_died_mid_tool_call_leaves_no_duplicates(configure, k8s_server, task_queue,
                                                                                  strategy):
    configure({"SreAgent": REACT_SCRIPT if strategy == "react" else NATIVE_SCRIPT}, strategy=strategy)
    execution = _running_execution(strategy)

    # First attempt: claimed, LLM called, reply stored, tool call started — then the worker is killed.
    _kill_worker_mid_tool_call(execution.id, k8s_server.hold)

    assert [m.role for m in messages(execution.id)] == ["system", "user", "assistant"]
    (in_flight,) = TimelineEvent.objects.filter(execution_id=execution.id, status="streaming")
    assert (in_flight.event_type, in_flight.metadata["tool_name"]) == ("mcp_tool_call", "get_pods")
    assert LLMInteraction.objects.filter(execution_id=execution.id).count() == 1
    assert not MCPInteraction.objects.filter(execution_id=execution.id).exists()

    # While the lease holds, a duplicate delivery does nothing; once it expires the iteration runs again.
    assert iteration_run(execution.id, 1) is None
    AgentExecution.objects.filter(id=execution.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    outcomes = [run_next(execution.id)] + run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    assert [e.event_type for e in timeline(execution.id)] == EXPECTED_EVENTS[strategy]
    assert all(e.status == "completed" for e in timeline(execution.id))
    assert [m.role for m in messages(execution.id)] == EXPECTED_ROLES[strategy]
    calls = interactions(execution.id)  # the killed attempt's call stays, superseded
    assert [(i.iteration, i.success, i.superseded) for i in calls] == [(1, True, True), (1, True, False),
                                                                       (2, True, False)]
    assert sent_roles(calls[2]) == EXPECTED_ROLES[strategy]
    (mcp,) = MCPInteraction.objects.filter(execution_id=execution.id)
    assert (mcp.tool, mcp.success, mcp.arguments) == ("get_pods", True, {"namespace": "prod"})
    assert "web-1  CrashLoopBackOff" in mcp.result
    # Token totals count each call once: the killed attempt's call (written before its tool call) when the
    # iteration ran again and superseded it (it was paid for); each completed iteration's with the UPDATE that
    # completed it.
    kept = sum(i.total_tokens for i in calls)
    assert calls[0].total_tokens > 0
    assert kept > 0
    assert AgentExecution.objects.get(id=execution.id).total_tokens == kept
    assert SessionCounters.objects.get(session_id=execution.session_id).total_tokens == kept
    # A late redelivery of a finished iteration changes nothing.
    assert iteration_run(execution.id, 1) is None
    assert len(messages(execution.id)) == 5 and len(timeline(execution.id)) == 6


def _running_execution(strategy: str) -> AgentExecution:
    """Rows as the dispatcher leaves them, written directly: these tests commit, and dispatching enqueues tasks."""
    now = timezone.now()
    session = AlertSession.objects.create(alert_data=ALERT_DATA, alert_type=ALERT_TYPE, chain_id="ctrl",
                                          status="in_progress", started_at=now)
    stage = Stage.objects.create(session=session, name="investigate", index=0, chain_stage_index=0,
                                 status="active", started_at=now)
    return AgentExecution.objects.create(stage=stage, session=session, agent_name="SreAgent",
                                         agent_config_name="SreAgent", iteration_strategy=strategy,
                                         llm_provider="scripted", llm_backend="scripted", max_iterations=5)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
@pytest.mark.parametrize("strategy", ["react", "native-thinking"])
def test_cancelling_the_session_stops_a_streaming_step(configure, strategy):
    text = "Thought: " + "reading the pod list carefully " * 12 + "\nFinal Answer: " + FINAL
    turn = {"thinking": "Let me think about this for a long while. " * 6, "text": text}
    configure({"SreAgent": [turn]}, strategy=strategy, latency_ms=4000, chunk_size=6)
    execution = _running_execution(strategy)
    claimed = iteration_begin(execution.id, 1)
    ctx = _context(claimed, 1)

    def cancel_soon():
        time.sleep(0.4)
        try:
            session_set_status(session_id=execution.session_id, status="cancelling", from_statuses=("in_progress",))
        finally:
            connection.close()

    canceller = threading.Thread(target=cancel_soon)
    canceller.start()
    outcome = controller_for(strategy).step(ctx)
    ctx.recorder.flush()  # as iteration_finish does with the step's last batch
    canceller.join(5)

    assert outcome.status is StepStatus.CANCELLED and outcome.error == "Cancelled by user"
    (thinking,) = timeline(execution.id)  # the stream was cut inside the thinking
    assert (thinking.event_type, thinking.status) == ("llm_thinking", "cancelled")
    assert 0 < len(thinking.content) < len(turn["thinking"])
    (interaction,) = interactions(execution.id)
    assert (interaction.success, interaction.error_message) == (False, "stopped: cancelled")
    assert [m.role for m in messages(execution.id)] == ["system", "user"]  # no half reply in the conversation
