"""A session's live events are numbered 1, 2, 3 … on its channel in the transaction that stores them, so a
number exists only once every lower one is committed: a client that sees a hole knows an event was lost."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction

from tarsy.models import AlertSession, Event
from tarsy.services.sessions import session_submit
from tarsy.streaming.publisher import publish, session_channel
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
    assert AlertSession.objects.get(id=session.id).event_seq == 4
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
