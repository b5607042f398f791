"""Re-driving what a broker restart lost: only what waited for a task from before the restart, once per restart,
never while the broker keeps running (a long queue is no loss)."""

from __future__ import annotations

import base64
import json
import time
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from tarsy.models import AgentExecution, AlertSession, Stage
from tarsy.pipeline.redrive import Redriven, broker_check
from tests.support.processes import free_port, start_redis

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def _queued_iterations() -> list[list]:
    """The run_iteration tasks this test process queued (its own queue on the test Redis), oldest first."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    raw = reversed(client.lrange(settings.CELERY_TASK_DEFAULT_QUEUE, 0, -1))
    messages = [json.loads(m) for m in raw]
    return [json.loads(base64.b64decode(m["body"]))[0] for m in messages
            if m["headers"]["task"] == "tarsy.tasks.run_iteration"]


def _execution(session: AlertSession, stage: Stage, name: str, **fields) -> AgentExecution:
    return AgentExecution.objects.create(stage=stage, session=session, agent_name=name, iteration_strategy="react",
                                         current_iteration=1, iterations_completed=1, **fields)


@pytest.fixture
def own_queue():
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(settings.CELERY_TASK_DEFAULT_QUEUE)
    yield
    client.delete(settings.CELERY_TASK_DEFAULT_QUEUE)


def test_a_broker_restart_redrives_only_what_waited_in_it_once(tmp_path, own_queue):
    port = free_port()
    broker = start_redis(tmp_path, port)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        assert broker_check(url) == Redriven(0, 0)  # a deployment's first connection: nothing waits yet
        session = AlertSession.objects.create(alert_data="pod web-1", alert_type="kubernetes", chain_id="kubernetes",
                                              status="in_progress")
        stage = Stage.objects.create(session=session, name="analysis", index=0, status="active")
        before = timezone.now() - timedelta(seconds=60)
        waiting = _execution(session, stage, "Waiting", status="active", last_heartbeat_at=before)
        _execution(session, stage, "Running", status="active", last_heartbeat_at=before,
                   lease_expires_at=timezone.now() + timedelta(seconds=120))
        _execution(session, stage, "Parked", status="waiting", last_heartbeat_at=before)
        _execution(session, stage, "Done", status="completed", last_heartbeat_at=before)

        assert broker_check(url) is None  # the same broker run: however long its queue, nothing is re-driven
        assert broker_check(url) is None
        assert _queued_iterations() == []

        broker.kill()
        broker.stop()
        broker = start_redis(tmp_path, port)  # back empty
        time.sleep(2.2)  # past the second the broker's start is rounded to
        _execution(session, stage, "Fresh", status="active", last_heartbeat_at=timezone.now())  # queued since

        assert broker_check(url) == Redriven(1, 0)
        assert _queued_iterations() == [[str(waiting.id), 2]]
        assert broker_check(url) is None  # once per restart: every other worker's connection finds it seen
        assert _queued_iterations() == [[str(waiting.id), 2]]
        assert AgentExecution.objects.get(id=waiting.id).resume_count == 0  # a re-drive is not a lost worker
    finally:
        broker.stop()
