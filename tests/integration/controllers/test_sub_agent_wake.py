"""An orchestrator's wake is exactly once: two sub-agents ending at the same moment, on two connections, queue
one next iteration for it (its row lock orders them), and that iteration reads both results."""

from __future__ import annotations

import json
import threading

import pytest
import redis
from django.conf import settings
from django.db import connection, transaction

from tarsy.models import AgentExecution, LLMInteraction, Stage
from tarsy.pipeline.stages import execution_end
from tarsy.services.executions import execution_wake

from .conftest import only_execution, run_next, start_session

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


def _queued_iterations(client: redis.Redis, execution_id: str) -> list[int]:
    """The iterations of `execution_id` waiting in this run's Celery queue (kombu's JSON messages)."""
    import base64

    found = []
    for raw in client.lrange(settings.CELERY_TASK_DEFAULT_QUEUE, 0, -1):
        message = json.loads(raw)
        args = json.loads(base64.b64decode(message["body"]))[0]
        if message["headers"]["task"] == "tarsy.tasks.run_iteration" and args[0] == execution_id:
            found.append(args[1])
    return found


def test_two_sub_agents_ending_together_wake_the_orchestrator_once(configure):
    dispatch = {"name": "tarsy.dispatch_agent", "arguments": {"agent": "DbAgent", "task": "check the database"}}
    configure({"SreAgent": [{"tool_calls": [dispatch, dispatch]}, {"text": "Both answered."}]},
              strategy="native-thinking", agents={"SreAgent": {"mcp_servers": ["k8s"], "sub_agents": ["DbAgent"]}})
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(settings.CELERY_TASK_DEFAULT_QUEUE)
    parent = only_execution(start_session())
    run_next(parent.id)  # dispatches both, then parks: no next iteration is queued
    parent.refresh_from_db()
    assert parent.status == "waiting" and _queued_iterations(client, str(parent.id)) == [1]  # (the stage's start)
    children = list(AgentExecution.objects.filter(parent_execution=parent))
    assert len(children) == 2

    together = threading.Barrier(2)

    def end(child: AgentExecution) -> None:
        try:
            together.wait()
            execution_end(execution_id=child.id, status="completed", final_analysis=f"{child.id} found a lock")
        finally:
            connection.close()

    threads = [threading.Thread(target=end, args=(child,)) for child in children]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    parent.refresh_from_db()
    assert parent.status == "pending"
    assert sorted(_queued_iterations(client, str(parent.id))) == [1, 2]  # one wake
    run_next(parent.id)
    parent.refresh_from_db()
    assert parent.status == "completed" and parent.final_analysis == "Both answered."
    sent = LLMInteraction.objects.get(execution=parent, iteration=2).conversation
    assert all(any(f"{child.id} found a lock" in m["content"] for m in sent) for child in children)
    client.delete(settings.CELERY_TASK_DEFAULT_QUEUE)


def test_a_wake_locks_the_execution_row_not_its_stage(configure):
    """The wake holds the execution's row only: its stage's stays free for the stage's other writers."""
    configure({"SreAgent": ["Thought: looking.\nFinal Answer: done."]}, agents={"SreAgent": {"mcp_servers": []}})
    execution = only_execution(start_session())
    AgentExecution.objects.filter(id=execution.id).update(status="waiting")
    free = []

    def lock_stage() -> None:
        try:
            with transaction.atomic():
                free.append(Stage.objects.select_for_update(nowait=True).filter(id=execution.stage_id).exists())
        finally:
            connection.close()

    with transaction.atomic():
        assert execution_wake(execution_id=execution.id) is not None
        other = threading.Thread(target=lock_stage)
        other.start()
        other.join()
    assert free == [True]
