"""Decisions become Celery tasks only after the deciding transaction commits, and never silently get lost."""

from __future__ import annotations

import json
import threading

import pytest
import redis
from celery.signals import worker_process_init
from django.conf import settings
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tarsy import decisions, tasks
from tarsy.decisions import FinishSession, Nothing, ReapSession, RunIteration, StartStage, enact_on_commit
from tarsy.models import OutboxTask
from tarsy.outbox import OutboxRelay, relay_pending, relay_running, stop_relay
from tarsy.services import outbox
from tests.support.processes import wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def queue():
    """This test run's own Celery queue in Redis (kombu keeps a list per queue), emptied first."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(settings.CELERY_TASK_DEFAULT_QUEUE)

    def queued() -> list[tuple[str, list]]:
        raw = client.lrange(settings.CELERY_TASK_DEFAULT_QUEUE, 0, -1)
        messages = [json.loads(item) for item in reversed(raw)]  # kombu pushes on the left: oldest last
        return [(m["headers"]["task"], json.loads(_body(m))[0]) for m in messages]

    yield queued
    client.delete(settings.CELERY_TASK_DEFAULT_QUEUE)


def _body(message: dict) -> str:
    import base64

    return base64.b64decode(message["body"]).decode()


def test_the_tasks_enactor_is_installed_when_django_starts():
    assert decisions._enactor is tasks.enact


def test_decisions_are_queued_in_order_only_when_the_transaction_commits(queue):
    with transaction.atomic():
        enact_on_commit([RunIteration("e-1", 3, 0), Nothing(), FinishSession("s-1")])
        enact_on_commit([ReapSession("s-2")])
        assert queue() == []
    assert queue() == [("tarsy.tasks.run_iteration", ["e-1", 3]), ("tarsy.tasks.finish_session", ["s-1"]),
                       ("tarsy.tasks.reap_session", ["s-2"])]


def test_a_rolled_back_transaction_queues_nothing(queue):
    with pytest.raises(RuntimeError, match="boom"), transaction.atomic():
        enact_on_commit([FinishSession("s-1")])
        raise RuntimeError("boom")
    assert queue() == []


def test_enacting_without_an_enactor_fails_before_the_commit(queue):
    decisions.register_enactor(None)
    try:
        with pytest.raises(RuntimeError, match="no enactor registered"), transaction.atomic():
            enact_on_commit([FinishSession("s-1")])
    finally:
        decisions.register_enactor(tasks.enact)
    assert queue() == []


def test_a_decision_carried_out_in_its_transaction_cannot_be_enqueued(queue):
    with pytest.raises(TypeError, match="carried out in its transaction"):
        enact_on_commit([StartStage("s-1", 1)])
    assert queue() == []


def test_a_queued_task_carries_the_plain_repr_of_its_arguments(queue, monkeypatch):
    """TarsyTask gives Celery the arguments' repr instead of its costlier saferepr walk: logs and inspection
    still show them."""
    from celery.app import amqp

    def saferepr(*args, **kwargs):
        raise AssertionError("saferepr walked the arguments")

    monkeypatch.setattr(amqp, "saferepr", saferepr)
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    tasks.enqueue_iteration("e-1", 3, 0)
    headers = json.loads(client.lrange(settings.CELERY_TASK_DEFAULT_QUEUE, 0, -1)[0])["headers"]
    assert (headers["argsrepr"], headers["kwargsrepr"]) == ("('e-1', 3)", "{}")


# ---- the transactional outbox (tarsy/outbox.py) -----------------------------------------------------------------

def _outbox() -> list[tuple[str, dict]]:
    return list(OutboxTask.objects.order_by("id").values_list("kind", "fields"))


def test_decided_tasks_are_written_in_their_transaction_and_deleted_once_queued(queue):
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        enact_on_commit([ReapSession("s-2"), FinishSession("s-1")])
        assert _outbox() == [("ReapSession", {"session_id": "s-2"}), ("FinishSession", {"session_id": "s-1"})]
        assert queue() == []
    assert queue() == [("tarsy.tasks.reap_session", ["s-2"]), ("tarsy.tasks.finish_session", ["s-1"])]
    assert _outbox() == []
    writes = [q["sql"].split()[0] for q in queries if "tarsy_outboxtask" in q["sql"]]
    assert writes.count("INSERT") == 1 and writes.count("DELETE") == 1  # one statement each, whatever the count


def test_the_next_iteration_is_sent_without_an_outbox_row(queue):
    """Every continuing iteration decides one: its record is the execution row (a broker that refuses it gets
    it kept in the outbox after all: tests/integration/test_faults.py)."""
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        enact_on_commit([RunIteration("e-1", 3, 0)])
        assert queue() == []
    assert queue() == [("tarsy.tasks.run_iteration", ["e-1", 3])]
    assert [q["sql"] for q in queries if "tarsy_outboxtask" in q["sql"]] == []


def test_in_a_process_with_a_relay_sent_rows_are_deleted_on_its_next_pass_in_one_statement(queue):
    """The commit path then costs a decision no DELETE transaction of its own."""
    relay = OutboxRelay(tasks.send, interval=0.2).start()
    try:
        with CaptureQueriesContext(connection) as queries:
            for n in range(3):
                with transaction.atomic():
                    enact_on_commit([FinishSession(f"s-{n}")])
        assert [q["sql"].split()[0] for q in queries if "tarsy_outboxtask" in q["sql"]] == ["INSERT"] * 3
        assert [task for task, _ in queue()] == ["tarsy.tasks.finish_session"] * 3
        wait_for(lambda: not _outbox(), 5, message="the relay's pass to delete the sent rows")
        assert len(queue()) == 3  # deleted, not sent again
    finally:
        relay.stop()


def test_a_prefork_child_leaves_the_deletes_of_its_sent_rows_to_a_relay_of_its_own(queue):
    """What a forked child receives first starts its relay, so its decisions commit no DELETE of their own."""
    assert not relay_running()
    worker_process_init.send(sender=None)
    try:
        assert relay_running()
        with CaptureQueriesContext(connection) as queries, transaction.atomic():
            enact_on_commit([FinishSession("s-1")])
        assert [q["sql"].split()[0] for q in queries if "tarsy_outboxtask" in q["sql"]] == ["INSERT"]
        assert queue() == [("tarsy.tasks.finish_session", ["s-1"])]
        wait_for(lambda: not _outbox(), 5, message="the child's relay to delete the sent row")
    finally:
        stop_relay()
    assert not relay_running()


def test_a_rolled_back_decision_leaves_no_outbox_row(queue):
    with pytest.raises(RuntimeError, match="boom"), transaction.atomic():
        enact_on_commit([FinishSession("s-1"), ReapSession("s-2")])
        raise RuntimeError("boom")
    assert _outbox() == []
    assert queue() == []


def test_outside_a_transaction_the_task_is_queued_and_its_row_deleted_at_once(queue):
    enact_on_commit([ReapSession("s-2")])
    assert queue() == [("tarsy.tasks.reap_session", ["s-2"])]
    assert _outbox() == []


def test_the_relay_leaves_fresh_rows_to_the_commit_path(queue):
    outbox.outbox_add(entries=[("FinishSession", {"session_id": "s-1"})])
    assert relay_pending(tasks.send) == 0
    assert queue() == []
    assert relay_pending(tasks.send, age=0) == 1
    assert queue() == [("tarsy.tasks.finish_session", ["s-1"])]
    assert _outbox() == []


def test_relays_skip_the_rows_another_relay_holds(queue):
    """Several processes relay at once: a row claimed by one (SKIP LOCKED) is never sent by another."""
    outbox.outbox_add(entries=[("FinishSession", {"session_id": "s-1"}), ("ReapSession", {"session_id": "s-2"})])
    claimed, release = threading.Event(), threading.Event()

    def other_relay() -> None:
        try:
            with transaction.atomic():
                outbox.outbox_claim(before=timezone.now(), limit=1)
                claimed.set()
                release.wait(10)
                raise RuntimeError("this relay dies holding its row")
        except RuntimeError:
            pass
        finally:
            connection.close()

    holder = threading.Thread(target=other_relay)
    holder.start()
    try:
        assert claimed.wait(10)
        assert relay_pending(tasks.send, age=0) == 1
        assert queue() == [("tarsy.tasks.reap_session", ["s-2"])]
    finally:
        release.set()
        holder.join()
    assert relay_pending(tasks.send, age=0) == 1  # its holder rolled back: the row is claimable again
    assert queue() == [("tarsy.tasks.reap_session", ["s-2"]), ("tarsy.tasks.finish_session", ["s-1"])]
    assert _outbox() == []


def test_the_outbox_backlog_is_a_metric(queue):
    from tarsy.metrics import render

    outbox.outbox_add(entries=[("FinishSession", {"session_id": "s-1"}), ("ReapSession", {"session_id": "s-2"})])
    assert "tarsy_outbox_tasks 2.0" in render()[0].decode()
