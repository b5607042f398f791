"""A step re-run after a crash leaves no duplicates; a cancelled session stops a step mid-stream."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from controllers.base import StepStatus
from controllers.registry import controller_for
from tarsy.models import AgentExecution, AlertSession, LLMInteraction, MCPInteraction, Stage, TimelineEvent
from tarsy.pipeline.execution_context import build_execution_context
from tarsy.pipeline.iteration import iteration_begin, iteration_run
from tarsy.services.recorder import DbRecorder
from tarsy.services.sessions import session_set_status

from .conftest import (
    ALERT_DATA,
    ALERT_TYPE,
    interactions,
    messages,
    only_execution,
    react_action,
    run_next,
    run_to_end,
    sent_roles,
    start_session,
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


class WorkerKilled(BaseException):
    """The worker process dies mid-step: nothing after this point runs, nothing is cleaned up."""


def _context(execution: AgentExecution, iteration: int):
    recorder = DbRecorder(session_id=execution.session_id, stage_id=execution.stage_id, execution_id=execution.id,
                          iteration=iteration)
    return build_execution_context(execution, iteration, recorder)


@pytest.mark.services
@pytest.mark.django_db
@pytest.mark.timeout(60)
@pytest.mark.parametrize("strategy", ["react", "native-thinking"])
def test_a_step_rerun_after_a_crash_leaves_no_duplicates(configure, tools, strategy):
    configure({"SreAgent": REACT_SCRIPT if strategy == "react" else NATIVE_SCRIPT}, strategy=strategy)
    execution = only_execution(start_session())
    pods = tools["k8s.get_pods"].fn

    def dies(**_):
        raise WorkerKilled()

    # First attempt: claimed, LLM called, reply stored, tool started — then the worker dies.
    claimed = iteration_begin(execution.id, 1)
    assert claimed is not None
    tools["k8s.get_pods"].fn = dies
    with pytest.raises(WorkerKilled):
        controller_for(strategy).step(_context(claimed, 1))
    tools["k8s.get_pods"].fn = pods
    assert [m.role for m in messages(execution.id)] == ["system", "user", "assistant"]
    assert TimelineEvent.objects.filter(execution_id=execution.id, status="streaming").count() == 1  # mcp_tool_call
    assert LLMInteraction.objects.filter(execution_id=execution.id).count() == 1

    # While the lease holds, a duplicate delivery does nothing; once it expires the iteration runs again.
    assert iteration_run(execution.id, 1) is None
    AgentExecution.objects.filter(id=execution.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    outcomes = [run_next(execution.id)] + run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    assert [e.event_type for e in timeline(execution.id)] == EXPECTED_EVENTS[strategy]
    assert all(e.status == "completed" for e in timeline(execution.id))
    assert [m.role for m in messages(execution.id)] == EXPECTED_ROLES[strategy]
    assert [(i.iteration, i.success) for i in interactions(execution.id)] == [(1, True), (2, True)]
    assert sent_roles(interactions(execution.id)[1]) == EXPECTED_ROLES[strategy]
    assert MCPInteraction.objects.filter(execution_id=execution.id).count() == 1
    # Token totals count each kept call once: the crashed attempt's call (written before its tool call) was
    # subtracted with it; the last call's tokens came with the UPDATE that completed the iteration.
    kept = sum(i.total_tokens for i in interactions(execution.id))
    assert kept > 0
    assert AgentExecution.objects.get(id=execution.id).total_tokens == kept
    assert AlertSession.objects.get(id=execution.session_id).total_tokens == kept
    # A late redelivery of a finished iteration changes nothing.
    assert iteration_run(execution.id, 1) is None
    assert len(messages(execution.id)) == 5 and len(timeline(execution.id)) == 6


def _running_execution(strategy: str) -> AgentExecution:
    """Rows as the dispatcher leaves them, written directly: this test commits, and must not enqueue tasks."""
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
