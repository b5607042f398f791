"""A session's live events are numbered 1, 2, 3 … on its channel in the transaction that stores them, so a
number exists only once every lower one is committed: a client that sees a hole knows an event was lost."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction

from tarsy.models import Event, SessionCounters
from tarsy.services.events import publish
from tarsy.services.intake.alerts import session_submit
from tarsy.streaming.publisher import session_channel
from tests.support.processes import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _numbers(session_id) -> list[tuple[str, int | None]]:
    rows = Event.objects.filter(channel=session_channel(session_id)).order_by("id")
    return list(rows.values_list("type", "seq"))


def test_a_sessions_first_event_is_one_and_the_next_ones_follow():
    session = session_submit(data={"alert": "numbered"})
    with transaction.atomic():
        publish("stage.started", {}, session_id=session.id)
        publish("timeline_event.created", {}, session_id=session.id)
    publish("session.status", {}, session_id=session.id)  # outside a transaction: stored in one of its own

    assert _numbers(session.id) == [("session.status", 1), ("stage.started", 2), ("timeline_event.created", 3),
                                    ("session.status", 4)]
    assert SessionCounters.objects.get(session_id=session.id).event_seq == 4
    assert Event.objects.filter(channel="sessions", session_id=session.id).get().seq is None  # the list is not


def test_a_rolled_back_transaction_takes_its_numbers_back():
    session = session_submit(data={"alert": "numbered"})
    with pytest.raises(RuntimeError), transaction.atomic():
        publish("stage.started", {}, session_id=session.id)
        raise RuntimeError("the writer fails after storing its event")
    publish("stage.started", {}, session_id=session.id)

    assert _numbers(session.id) == [("session.status", 1), ("stage.started", 2)]


@pytest.mark.services
@pytest.mark.timeout(30)
def test_a_later_writer_numbers_after_the_earlier_one_commits():
    """PostgreSQL: the second writer waits on the session row the first one numbered with, then continues from
    the committed counter; it never holds n+1 while n is uncommitted."""
    session = session_submit(data={"alert": "numbered"})
    first_stored, first_commit = threading.Event(), threading.Event()
    second: dict = {}

    def first_writer() -> None:
        try:
            with transaction.atomic():
                publish("timeline_event.created", {"by": "first"}, session_id=session.id)
                first_stored.set()
                first_commit.wait(10)
        finally:
            connections.close_all()

    def second_writer() -> None:
        try:
            first_stored.wait(10)
            with transaction.atomic():
                second["rows"] = publish("timeline_event.created", {"by": "second"}, session_id=session.id)
                second["committed_first"] = first_commit.is_set()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first_writer), threading.Thread(target=second_writer)]
    for thread in threads:
        thread.start()
    first_stored.wait(10)
    wait_for(lambda: not threads[1].is_alive() or _waiting_on_a_lock(), timeout=5, message="the second writer waits")
    assert threads[1].is_alive()  # blocked on the session row
    first_commit.set()
    for thread in threads:
        thread.join(10)

    assert second["committed_first"] and second["rows"][0].seq == 3
    assert _numbers(session.id) == [("session.status", 1), ("timeline_event.created", 2),
                                    ("timeline_event.created", 3)]


def _waiting_on_a_lock() -> bool:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = "
                       "current_database()")
        return cursor.fetchone()[0] > 0


@pytest.mark.services
@pytest.mark.timeout(30)
def test_a_stage_join_and_a_writer_numbering_an_event_of_the_stage_never_deadlock(scripted_config):
    """The sweeper ends an orphaned execution: it joins the stage under the stage's lock, then takes the session
    row. Meanwhile a parallel agent stores a timeline event of that stage and numbers its catch-up event on the
    session row; at its commit the deferred foreign keys take KEY SHARE locks on the stage. FOR NO KEY UPDATE
    (the join's lock) does not block KEY SHARE, so that commit goes through and the sweeper gets the row after
    it; FOR UPDATE would block it, and each would wait on the other."""
    from tarsy.models import AgentExecution, Stage, TimelineEvent
    from tarsy.pipeline.dispatch import dispatch_pending
    from tarsy.services import sessions, stages, timeline

    scripted_config({"KubernetesAgent": ["Final Answer: unused."]})
    session = session_submit(data={"alert": "parallel agents"})
    dispatch_pending()
    stage = Stage.objects.get(session=session)
    execution = AgentExecution.objects.get(stage=stage)
    stage_held = threading.Event()
    errors: list[BaseException] = []

    def agent() -> None:
        try:
            stage_held.wait(10)
            with transaction.atomic():
                event = TimelineEvent.objects.create(session_id=session.id, stage_id=stage.id,
                                                     execution_id=execution.id, event_type="llm_thinking",
                                                     sequence_number=99, iteration=1)
                timeline.timeline_event_created(event)
        except BaseException as exc:  # noqa: BLE001 - reported below, a deadlock included
            errors.append(exc)
        finally:
            connections.close_all()

    writer = threading.Thread(target=agent)

    def sweeper() -> None:
        try:
            with transaction.atomic():
                stages.stage_join(stage_id=stage.id)
                stage_held.set()
                writer.join(2)  # it commits at once, or waits on the stage for good
                sessions.session_lock(session_id=session.id)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=sweeper), writer]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert errors == []
    assert _numbers(session.id)[-1][0] == "timeline_event.created"
