"""Every LLM call that starts leaves a row; a dropped database connection costs a statement's retry, not the call.

The row is written with the iteration's claim (status `started`), completed with the call's record, and closed as
`interrupted` by the sweeper when the process making the call died. A connection the server ends while the model
thinks is reopened by the next write, and the iteration completes once, on its first attempt.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from tarsy.models import AgentExecution, CallStatus, LLMInteraction
from tarsy.pipeline.iteration import iteration_begin, iteration_run
from tarsy.pipeline.sweeper import sweep_once

from .conftest import only_execution, run_next, start_session

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

UNSURE = "Thought: step {n}: the evidence so far is inconclusive, look again.\nAction: none.none\nAction Input: {{}}"
SCRIPT = {"SreAgent": [UNSURE.format(n=n) for n in range(1, 4)]}
NO_TOOLS = {"SreAgent": {"mcp_servers": []}}


def _calls(execution_id) -> list[tuple[int, str, bool]]:
    return list(LLMInteraction.objects.filter(execution_id=execution_id).order_by("id")
                .values_list("iteration", "status", "superseded"))


def test_a_live_call_is_never_closed_by_the_sweeper(configure):
    configure(SCRIPT, agents=NO_TOOLS)
    execution = only_execution(start_session())
    assert iteration_begin(execution.id, 1) is not None  # claimed: the call's row is written, the lease held
    assert _calls(execution.id) == [(1, CallStatus.STARTED, False)]
    sweep_once()
    assert _calls(execution.id) == [(1, CallStatus.STARTED, False)]


def test_a_call_whose_process_died_is_closed_as_interrupted_by_the_sweeper(configure):
    configure(SCRIPT, agents=NO_TOOLS)
    execution = only_execution(start_session())
    assert iteration_begin(execution.id, 1) is not None
    # The worker is killed mid-call: nothing completes the row, and the lease runs out.
    AgentExecution.objects.filter(id=execution.id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    sweep_once()
    row = LLMInteraction.objects.get(execution_id=execution.id)
    assert (row.status, row.success, row.total_tokens) == (CallStatus.INTERRUPTED, False, 0)
    assert "interrupted" in row.error_message


def test_each_iteration_completes_the_row_its_claim_wrote(configure):
    configure(SCRIPT, agents=NO_TOOLS)
    execution = only_execution(start_session())
    run_next(execution.id)
    run_next(execution.id)
    rows = list(LLMInteraction.objects.filter(execution_id=execution.id).order_by("id"))
    assert [(r.iteration, r.status, r.interaction_type) for r in rows] == [
        (1, CallStatus.COMPLETED, "iteration"), (2, CallStatus.COMPLETED, "iteration")]
    assert all(r.success and r.total_tokens > 0 and r.conversation for r in rows)
    done = AgentExecution.objects.get(id=execution.id)
    assert done.total_tokens == sum(r.total_tokens for r in rows)


def test_a_rerun_iteration_marks_the_interrupted_call_and_counts_it(configure):
    configure(SCRIPT, agents=NO_TOOLS)
    execution = only_execution(start_session())
    assert iteration_begin(execution.id, 1) is not None
    AgentExecution.objects.filter(id=execution.id).update(lease_expires_at=None)  # released: the task retries
    run_next(execution.id)
    assert _calls(execution.id) == [(1, CallStatus.INTERRUPTED, True), (1, CallStatus.COMPLETED, False)]


def _backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _terminate_after(pid: int, delay: float) -> threading.Thread:
    """From another connection, end the iteration's backend while its model is thinking."""
    def terminate() -> None:
        time.sleep(delay)
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        finally:
            connections.close_all()

    thread = threading.Thread(target=terminate)
    thread.start()
    return thread


def test_a_connection_ended_while_the_model_thinks_costs_no_rerun(configure):
    configure(SCRIPT, agents=NO_TOOLS, latency_ms=1500)
    execution = only_execution(start_session())
    run_next(execution.id)
    killer = _terminate_after(_backend_pid(), 0.7)
    outcome = iteration_run(execution.id, 2)
    killer.join()
    assert outcome is not None and not outcome.is_terminal
    after = AgentExecution.objects.get(id=execution.id)
    assert (after.iterations_completed, after.attempt) == (2, 2)  # one attempt per iteration: nothing re-ran
    assert _calls(execution.id) == [(1, CallStatus.COMPLETED, False), (2, CallStatus.COMPLETED, False)]


class _Lost(Exception):
    """The completing transaction's connection went away after the batch was written."""


def test_a_completion_rolled_back_after_its_batch_was_written_writes_it_again(configure):
    """The completion is retried after a lost connection (tarsy.db_connections.reconnecting): the batch a
    rolled-back transaction had written must still be there for the retry, or the iteration completes empty."""
    from django.db import transaction

    from tarsy.models import Message
    from tarsy.pipeline.iteration import _step, iteration_finish, iteration_recorder
    from tarsy.pipeline.iteration_calls import IterationCalls

    configure(SCRIPT, agents=NO_TOOLS)
    execution = only_execution(start_session())
    claimed = iteration_begin(execution.id, 1)
    recorder = iteration_recorder(claimed, 1)
    outcome = _step(claimed.execution, 1, recorder, IterationCalls())
    with pytest.raises(_Lost), transaction.atomic():
        iteration_finish(execution.id, 1, outcome, 0, recorder)
        raise _Lost
    assert not Message.objects.filter(execution_id=execution.id, iteration=1, role="assistant").exists()
    iteration_finish(execution.id, 1, outcome, 0, recorder)
    assert Message.objects.filter(execution_id=execution.id, iteration=1, role="assistant").count() == 1
    assert _calls(execution.id) == [(1, CallStatus.COMPLETED, False)]
    assert AgentExecution.objects.get(id=execution.id).iterations_completed == 1
