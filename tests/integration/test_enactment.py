"""Decisions become Celery tasks only after the deciding transaction commits, and never silently get lost."""

from __future__ import annotations

import json

import pytest
import redis
from django.conf import settings
from django.db import transaction

from tarsy import decisions, tasks
from tarsy.decisions import FinishSession, Nothing, ReapSession, RunIteration, StartStage, enact_on_commit

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
