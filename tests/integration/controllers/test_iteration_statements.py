"""What one iteration costs the database, statement by statement, so it cannot silently grow back.

Each statement is a round trip and each COMMIT waits for a WAL flush; an iteration's overhead besides the LLM
call is mostly these (tests/bench/iteration_overhead.py measures it). A change that adds one must say why here.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from tarsy import tasks
from tarsy.models import AgentExecution, AlertSession
from tarsy.outbox import OutboxRelay
from tarsy.pipeline.iteration import iteration_run
from tarsy.services.recorder.liveness import Liveness, heartbeats_stamp

from .conftest import only_execution, react_action, run_next, start_session

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60),
              pytest.mark.usefixtures("outbox_relay")]


@pytest.fixture
def outbox_relay():
    """As in a worker: its relay deletes the outbox rows of the tasks the process sent, on its next pass (none
    comes during a test), so the commit path itself writes only the row."""
    relay = OutboxRelay(tasks.send, interval=3600).start()
    yield relay
    relay.stop()

UNSURE = "Thought: step {n}: the evidence so far is inconclusive, look again.\nAction: none.none\nAction Input: {{}}"
# Session events are numbered on their channel as they are stored (services.events.events_number): the session
# counters row's event_seq raised and read back in one INSERT … ON CONFLICT DO UPDATE … RETURNING (with the
# iteration's token totals at its completion), held to the commit, so a client can tell a hole in the numbers
# (events lost on the way) from events still to come.
NUMBERING = ["INSERT tarsy_sessioncounters"]
# What tarsy.pipeline.iteration's docstring and docs/architecture.md quote for a continuing iteration.
CONTINUING_STATEMENTS = 9
CONTINUING_COMMITS = 2
PODS = react_action("Check the pods.", "k8s.get_pods", '{"namespace": "prod"}')


def _statements(queries: CaptureQueriesContext) -> list[str]:
    """Each statement as `VERB table` (BEGIN and COMMIT as they are; a WITH … statement by its main verb)."""
    out = []
    for query in queries:
        sql = re.sub(r"^WITH .*?\) (?=INSERT|UPDATE|DELETE|SELECT)", "", query["sql"])
        table = re.search(r'"(tarsy_\w+)"', sql)
        out.append(f"{sql.split()[0]} {table.group(1)}" if table else sql)
    return out


def _second_iteration(execution_id) -> list[str]:
    run_next(execution_id)
    with CaptureQueriesContext(connection) as queries:
        iteration_run(execution_id, 2)
    return _statements(queries)


def test_an_iteration_that_continues_without_a_tool(configure):
    """The benchmark's iteration: one streamed LLM call, its reply kept, feedback for the model, next one queued."""
    configure({"SreAgent": [UNSURE.format(n=n) for n in range(1, 4)]}, agents={"SreAgent": {"mcp_servers": []}})
    execution = only_execution(start_session())

    statements = _second_iteration(execution.id)
    assert statements == [
        # The claim: the row under its lock, with stage, session, whether the session has action proposals, the
        # execution's last timeline number and its conversation (one JSON value); then the lease, and the row of
        # the LLM call about to start (a call whose process dies still leaves one: the sweeper closes it as
        # interrupted).
        "BEGIN",
        "SELECT tarsy_agentexecution",
        "UPDATE tarsy_agentexecution",
        "INSERT tarsy_llminteraction",
        "COMMIT",
        # The reply arrives whole (the scripted model answers at once), so its event has nothing to stream: it is
        # stored complete with the completion, no transaction of its own (services.recorder.stream). A reply that
        # streams on past CHUNK_INTERVAL_S is stored with its first chunks, when users would see its first text.
        # The completion: compare-and-set (on the iteration and the attempt, so the fence needs no statement of its
        # own here) with the iteration's tokens, then the recorder's last batch (one INSERT per model: messages,
        # the reply's event and the feedback event; the call's row completed; the catch-up events of both,
        # numbered by the statement that also adds the iteration's tokens to the session's totals). The next
        # iteration is sent after this commit, without an outbox row (tarsy/outbox.py: SENT_FIRST).
        "BEGIN",
        "UPDATE tarsy_agentexecution",
        "INSERT tarsy_message",
        "INSERT tarsy_timelineevent",
        "UPDATE tarsy_llminteraction",
        *NUMBERING,
        "INSERT tarsy_event",
        "COMMIT",
    ]
    assert len([s for s in statements if s not in ("BEGIN", "COMMIT")]) == CONTINUING_STATEMENTS
    assert statements.count("COMMIT") == CONTINUING_COMMITS


def test_an_iteration_with_a_tool_call(configure):
    configure({"SreAgent": [PODS, PODS, "Thought: enough.\nFinal Answer: web-1 lacks its config map."]})
    execution = only_execution(start_session())

    assert _second_iteration(execution.id) == [
        "BEGIN",  # the claim, as above
        "SELECT tarsy_agentexecution",
        "UPDATE tarsy_agentexecution",
        "INSERT tarsy_llminteraction",
        "COMMIT",
        # Before the tool call: what the step recorded (the reply; its event, shown as the tool call, and the tool
        # call's event shown at once, in one INSERT; the call's row completed; their catch-up events).
        "BEGIN",
        "INSERT tarsy_message",
        "INSERT tarsy_timelineevent",
        "UPDATE tarsy_llminteraction",
        *NUMBERING,
        "INSERT tarsy_event",
        "COMMIT",
        # The result's evidence id: the session's counter raised and read back in one statement, its own
        # transaction (parallel agents share the counter; the row lock orders them).
        "INSERT tarsy_sessioncounters",
        # The completion, as above, with the tool's MCP record and the observation.
        "BEGIN",
        "UPDATE tarsy_agentexecution",
        "INSERT tarsy_message",
        "INSERT tarsy_mcpinteraction",
        "INSERT tarsy_timelineevent",
        "UPDATE tarsy_timelineevent",
        *NUMBERING,
        "INSERT tarsy_event",
        "COMMIT",
    ]


def test_the_last_iteration_of_a_one_agent_stage(configure):
    """The answer ends the execution, closes its stage and finishes the session, in the completing transaction."""
    configure({"SreAgent": [UNSURE.format(n=1), "Thought: enough.\nFinal Answer: web-1 lacks its config map."],
               "executive_summary": ["web-1 is down."]}, agents={"SreAgent": {"mcp_servers": []}})
    execution = only_execution(start_session())

    assert _second_iteration(execution.id) == [
        "BEGIN",  # the claim, as above
        "SELECT tarsy_agentexecution",
        "UPDATE tarsy_agentexecution",
        "INSERT tarsy_llminteraction",
        "COMMIT",
        "BEGIN",  # the completion and the batch's last rows, as above
        "UPDATE tarsy_agentexecution",
        "INSERT tarsy_message",
        "INSERT tarsy_timelineevent",
        "UPDATE tarsy_llminteraction",
        *NUMBERING,
        "INSERT tarsy_event",
        # execution_end joins this transaction (no savepoint): the terminal compare-and-set (its stage, parent
        # and agent as the claim read them, no read again); the stage under its lock with its executions (read
        # once, for the join and the event); the stage closed and its event; the session under its lock to
        # decide what follows (its finish, queued after the commit through the outbox).
        "UPDATE tarsy_agentexecution",
        "SELECT tarsy_stage",
        "SELECT tarsy_agentexecution",
        "UPDATE tarsy_stage",
        *NUMBERING,
        "INSERT tarsy_event",
        "SELECT tarsy_alertsession",
        "INSERT tarsy_outboxtask",  # the session's finish
        "COMMIT",
    ]


def test_the_stop_check_reads_the_execution_and_its_session_only(configure):
    """It runs every few seconds while a model thinks: one row and its session, no join the model's ordering adds."""
    configure({"SreAgent": [UNSURE.format(n=1)]}, agents={"SreAgent": {"mcp_servers": []}})
    execution = only_execution(start_session())
    liveness = Liveness(session_id=execution.session_id, execution_id=execution.id)
    with CaptureQueriesContext(connection) as queries:
        assert liveness.stop_reason() is None
    [read] = [q["sql"] for q in queries if q["sql"].startswith("SELECT")]
    assert "tarsy_stage" not in read and read.count("JOIN") == 1, read


def test_a_superseded_attempt_never_stamps_a_heartbeat(configure):
    """A worker woken after its lease ran out must not make the execution (or its session) look alive: a later
    attempt owns them now, and the sweeper's judgement rests on those stamps."""
    configure({"SreAgent": [UNSURE.format(n=1)]}, agents={"SreAgent": {"mcp_servers": []}})
    execution = only_execution(start_session())
    stale = Liveness(session_id=execution.session_id, execution_id=execution.id, attempt=execution.attempt)
    taken = AgentExecution.objects.filter(id=execution.id).update(attempt=F("attempt") + 1, last_heartbeat_at=None)
    AlertSession.all_objects.filter(id=execution.session_id).update(last_heartbeat_at=None)
    assert taken == 1
    heartbeats_stamp([stale])
    assert AgentExecution.objects.get(id=execution.id).last_heartbeat_at is None
    assert AlertSession.all_objects.get(id=execution.session_id).last_heartbeat_at is None
    current = Liveness(session_id=execution.session_id, execution_id=execution.id, attempt=execution.attempt + 1)
    heartbeats_stamp([stale, current])
    assert AgentExecution.objects.get(id=execution.id).last_heartbeat_at is not None
    assert AlertSession.all_objects.get(id=execution.session_id).last_heartbeat_at is not None
