"""Heartbeats of steps in flight: one thread per process stamps them all, only while each step runs and only for
the attempt that holds its execution; a step that ended, or was taken over, makes nothing look alive."""

from __future__ import annotations

import time

import pytest
from django.db.models import F

from tarsy.models import AgentExecution, AlertSession
from tarsy.services.recorder import liveness
from tarsy.services.recorder.liveness import Liveness
from tests.support.processes import wait_for

from .conftest import only_execution, start_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

INTERVAL_S = 0.2


@pytest.fixture
def fast_beats(monkeypatch):
    monkeypatch.setattr(liveness, "HEARTBEAT_INTERVAL_S", INTERVAL_S)


def _unstamp(execution: AgentExecution) -> None:
    AgentExecution.objects.filter(id=execution.id).update(last_heartbeat_at=None)
    AlertSession.all_objects.filter(id=execution.session_id).update(last_heartbeat_at=None)


def _stamps(execution: AgentExecution) -> tuple:
    return (AgentExecution.objects.get(id=execution.id).last_heartbeat_at,
            AlertSession.all_objects.get(id=execution.session_id).last_heartbeat_at)


def test_an_ended_or_superseded_step_gets_no_heartbeat(configure, fast_beats):
    configure({"SreAgent": ["Thought: done.\nFinal Answer: fine."]}, agents={"SreAgent": {"mcp_servers": []}})
    execution = only_execution(start_session())
    _unstamp(execution)

    ended = Liveness(session_id=execution.session_id, execution_id=execution.id, attempt=execution.attempt)
    ended.end()
    superseded = Liveness(session_id=execution.session_id, execution_id=execution.id, attempt=execution.attempt)
    AgentExecution.objects.filter(id=execution.id).update(attempt=F("attempt") + 1)
    time.sleep(INTERVAL_S * 4)
    assert _stamps(execution) == (None, None)
    superseded.end()


def test_a_running_step_is_stamped_by_the_process_heartbeat_thread_until_it_ends(configure, fast_beats):
    configure({"SreAgent": ["Thought: done.\nFinal Answer: fine."]}, agents={"SreAgent": {"mcp_servers": []}})
    execution = only_execution(start_session())
    _unstamp(execution)

    step = Liveness(session_id=execution.session_id, execution_id=execution.id, attempt=execution.attempt)
    wait_for(lambda: None not in _stamps(execution), 10, message="the heartbeat thread to stamp the step")
    step.end()
    time.sleep(INTERVAL_S * 2)  # a round already under way when it ended may still land
    _unstamp(execution)
    time.sleep(INTERVAL_S * 4)
    assert _stamps(execution) == (None, None)
