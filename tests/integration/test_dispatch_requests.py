"""Alerts submitted together share one dispatch task: intake bursts must not flood the queue."""

from __future__ import annotations

import threading
import time

import pytest
import redis
from django.conf import settings
from django.db import connection, transaction

from tarsy.models import AlertSession, SessionStatus
from tarsy.pipeline.dispatch import DISPATCH_COALESCE_S
from tarsy.services.intake.alerts import session_submit
from tests.support.processes import wait_for
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def _queued_tasks() -> list[str]:
    """Task names waiting in this test run's own Celery queue (kombu keeps a Redis list per queue)."""
    import json

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    return [json.loads(raw)["headers"]["task"] for raw in client.lrange(settings.CELERY_TASK_DEFAULT_QUEUE, 0, -1)]


@pytest.mark.timeout(60)
def test_a_burst_of_alerts_queues_one_dispatch_and_a_later_alert_another(scripted_config):
    scripted_config({})
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(settings.CELERY_TASK_DEFAULT_QUEUE)
    with transaction.atomic():  # the 20 commit hooks then run back to back, well within one window
        for index in range(20):
            session_submit(data={"alert": "burst", "n": index})
    time.sleep(DISPATCH_COALESCE_S * 4)
    assert _queued_tasks() == ["tarsy.tasks.dispatch_sessions"]

    session_submit(data={"alert": "later"})
    wait_for(lambda: len(_queued_tasks()) == 2, timeout=5, message="a dispatch for the later alert")
    assert AlertSession.objects.filter(status=SessionStatus.PENDING).count() == 21


@pytest.mark.timeout(120)
def test_coalesced_dispatch_still_starts_every_alert(scripted_config, worker):
    scripted_config({"KubernetesAgent": ["Thought: seen.\nFinal Answer: fine."], "executive_summary": ["fine"]},
                    tarsy={"queue": {"max_concurrent_sessions": 10}})
    proc = worker()
    ids = [str(session_submit(data={"alert": "burst", "n": index}).id) for index in range(8)]
    wait_terminal(ids, timeout=90, proc=proc)
    assert set(AlertSession.objects.filter(id__in=ids).values_list("status", flat=True)) == {"completed"}


def _waiting_on_advisory_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock' AND wait_event = 'advisory'")
        return cursor.fetchone()[0]


@pytest.mark.timeout(60)
def test_dispatchers_of_one_process_wait_their_turn_without_a_connection(scripted_config):
    """While another process dispatches (it holds the advisory lock), five threads of this one ask for a dispatch:
    one waits on the lock, one waits its turn in the process holding no connection, and three return at once."""
    from tarsy.pipeline.dispatch import dispatch_pending
    from tarsy.services.queue import sessions_lock_dispatch

    scripted_config({})
    held, release = threading.Event(), threading.Event()
    returned: list[list[str]] = []

    def other_process() -> None:
        try:
            with transaction.atomic():
                sessions_lock_dispatch()
                held.set()
                release.wait(20)
        finally:
            connection.close()

    def dispatch() -> None:
        try:
            returned.append(dispatch_pending())
        finally:
            connection.close()

    holder = threading.Thread(target=other_process)
    holder.start()
    assert held.wait(10)
    session_submit(data={"alert": "queued behind the lock"})
    dispatchers = [threading.Thread(target=dispatch) for _ in range(5)]
    try:
        for thread in dispatchers:
            thread.start()
        wait_for(lambda: len(returned) == 3, timeout=10, message="three dispatchers to return at once")
        wait_for(lambda: _waiting_on_advisory_locks() >= 1, timeout=10, message="one dispatcher on the lock")
        assert _waiting_on_advisory_locks() == 1
    finally:
        release.set()
        holder.join(10)
        for thread in dispatchers:
            thread.join(10)
    assert sorted(len(claimed) for claimed in returned) == [0, 0, 0, 0, 1]  # the session, claimed once
