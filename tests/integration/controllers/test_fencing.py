"""Fencing: a step that outlives its lease (a stuck thread, a paused process) and wakes up after a later attempt
took its iteration over can write nothing but the record of the calls it made."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from controllers.base import StepOutcome, StepStatus
from controllers.registry import controller_for
from tarsy.models import (
    AgentExecution,
    LLMInteraction,
    MCPInteraction,
    Message,
    SessionCounters,
    TimelineEvent,
)
from tarsy.pipeline.execution_context import build_execution_context
from tarsy.pipeline.iteration import iteration_begin, iteration_finish, iteration_recorder
from tarsy.services.recorder import AttemptSuperseded
from tests.support.processes import wait_for
from tests.support.sessions import assert_no_duplicates

from .conftest import only_execution, react_action, run_to_end, start_session

SCRIPT = [{"text": react_action("Check the pods.", "k8s.get_pods", '{"namespace": "prod"}'),
           "usage": {"input_tokens": 1000, "output_tokens": 100}},
          {"text": "Thought: Clear now.\nFinal Answer: web-1 lacks its config map.",
           "usage": {"input_tokens": 2000, "output_tokens": 200}}]


@pytest.fixture(autouse=True)
def short_lease(settings):
    """Leases of 3.2 s (a 3 s iteration timeout and 0.2 s of grace): writes are fenced from 1.6 s into a step."""
    settings.ITERATION_HARD_LIMIT_GRACE_S = 0.2


def _lease_runs_out(execution_id) -> None:
    AgentExecution.objects.filter(id=execution_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_an_attempt_waking_after_its_lease_was_taken_over_lands_only_its_calls(configure):
    configure({"SreAgent": [{**SCRIPT[0], "latency_ms": 2000}, SCRIPT[1]]}, chunk_size=8, iteration_timeout=3)
    session = start_session()
    execution_id = only_execution(session).id
    stale = iteration_begin(execution_id, 1)
    stale_recorder = iteration_recorder(stale, 1)
    refused: list[BaseException] = []
    failed: list[BaseException] = []

    def stale_step() -> None:
        try:
            controller_for("react").step(build_execution_context(stale.execution, 1, stale_recorder))
        except AttemptSuperseded as exc:
            refused.append(exc)
        except BaseException as exc:  # shown by the assertion below, not lost in the thread
            failed.append(exc)
            raise
        finally:
            connection.close()

    thread = threading.Thread(target=stale_step)
    thread.start()
    # While the stale attempt waits on its LLM call, its lease runs out and the sweeper's re-run claims the
    # iteration (discarding what the stale attempt had written so far).
    wait_for(lambda: TimelineEvent.objects.filter(execution_id=execution_id, status="streaming").exists(), 20,
             message="the stale attempt's call to stream")
    _lease_runs_out(execution_id)
    fresh = iteration_begin(execution_id, 1)
    assert (stale.attempt, fresh.attempt) == (1, 2)
    thread.join(30)

    # The stale attempt's call returned; its next write was refused, and nor can it complete the iteration,
    # though the fresh attempt has not completed it yet.
    assert not thread.is_alive(), "the stale attempt's step is still running"
    assert len(refused) == 1, failed
    with pytest.raises(AttemptSuperseded):
        iteration_finish(execution_id, 1, StepOutcome(StepStatus.CONTINUE), recorder=stale_recorder)
    assert AgentExecution.objects.get(id=execution_id).iterations_completed == 0
    assert not TimelineEvent.objects.filter(execution_id=execution_id).exists()
    assert not Message.objects.filter(execution_id=execution_id).exists()
    assert not MCPInteraction.objects.filter(execution_id=execution_id).exists()  # it never reached its tool

    # The fresh attempt runs as if the stale one never existed; the execution goes on to its end.
    fresh_recorder = iteration_recorder(fresh, 1)
    outcome = controller_for("react").step(build_execution_context(fresh.execution, 1, fresh_recorder))
    iteration_finish(execution_id, 1, outcome, recorder=fresh_recorder)
    assert run_to_end(execution_id)[-1].status is StepStatus.COMPLETED
    assert_no_duplicates(session.id)
    assert [e.event_type for e in TimelineEvent.objects.filter(execution_id=execution_id, iteration=1)
            .order_by("sequence_number")] == ["llm_thinking", "llm_tool_call", "mcp_tool_call", "tool_result"]

    # The stale attempt's LLM call was made and paid for: on the record, marked superseded, counted in spend.
    calls = LLMInteraction.objects.filter(execution_id=execution_id, iteration=1).order_by("id")
    assert [c.superseded for c in calls] == [True, False]
    execution = AgentExecution.objects.get(id=execution_id)
    stored = LLMInteraction.objects.filter(execution_id=execution_id)
    assert execution.total_tokens == sum(stored.values_list("total_tokens", flat=True)) == 1100 * 2 + 2200
    assert SessionCounters.objects.get(session_id=session.id).total_tokens >= execution.total_tokens


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_an_attempt_stopped_between_its_claim_and_its_first_write_is_fenced_on_waking(configure):
    """The unfenced start of a step counts from the claim: a process stopped right after claiming (SIGSTOP) and
    woken once another task took the iteration over writes nothing."""
    configure({"SreAgent": SCRIPT}, iteration_timeout=3)
    session = start_session()
    execution_id = only_execution(session).id
    stale = iteration_begin(execution_id, 1)
    time.sleep(1.7)  # stopped past half its lease (1.6 s) ...
    _lease_runs_out(execution_id)
    fresh = iteration_begin(execution_id, 1)  # ... while the sweeper's re-run claimed the iteration
    stale_recorder = iteration_recorder(stale, 1)  # the stopped process wakes and goes on with its step
    with pytest.raises(AttemptSuperseded):
        controller_for("react").step(build_execution_context(stale.execution, 1, stale_recorder))
    assert not TimelineEvent.objects.filter(execution_id=execution_id).exists()
    assert not Message.objects.filter(execution_id=execution_id).exists()

    fresh_recorder = iteration_recorder(fresh, 1)
    outcome = controller_for("react").step(build_execution_context(fresh.execution, 1, fresh_recorder))
    iteration_finish(execution_id, 1, outcome, recorder=fresh_recorder)
    assert run_to_end(execution_id)[-1].status is StepStatus.COMPLETED
    assert_no_duplicates(session.id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_an_attempt_whose_lease_was_only_released_by_itself_still_writes(configure):
    """The fence refuses a superseded attempt, not a slow one: without a takeover, writes land as usual."""
    configure({"SreAgent": SCRIPT}, iteration_timeout=3)
    session = start_session()
    execution_id = only_execution(session).id
    current = iteration_begin(execution_id, 1)
    _lease_runs_out(execution_id)  # expired, but nobody took it over
    recorder = iteration_recorder(current, 1)
    outcome = controller_for("react").step(build_execution_context(current.execution, 1, recorder))
    iteration_finish(execution_id, 1, outcome, recorder=recorder)
    assert AgentExecution.objects.get(id=execution_id).iterations_completed == 1
    assert TimelineEvent.objects.filter(execution_id=execution_id, iteration=1).count() == 4
