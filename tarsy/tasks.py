"""Celery tasks: thin adapters — ids in, one pipeline call, the next step enqueued on commit.

All are idempotent by state guard (`acks_late` + `reject_on_worker_lost` make
redelivery safe). Results are ignored: the database is the result.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from tarsy.config import get_config

_RELIABLE = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}


@shared_task(name="tarsy.tasks.dispatch_sessions", **_RELIABLE)
def dispatch_sessions() -> None:
    from tarsy.pipeline.dispatch import dispatch_pending

    dispatch_pending()


@shared_task(name="tarsy.tasks.run_iteration", **_RELIABLE)
def run_iteration(execution_id: str, iteration: int) -> None:
    from tarsy.pipeline.iteration import iteration_run

    iteration_run(execution_id, iteration)


def _iteration_limits(execution_id: str) -> tuple[float, float]:
    from tarsy.models import AgentExecution

    timeout = (AgentExecution.objects.filter(id=execution_id).values_list("iteration_timeout_s", flat=True).first()
               or get_config().defaults.iteration_timeout)
    timeout = min(timeout, settings.MAX_ITERATION_TIMEOUT_S)
    return timeout, timeout + settings.ITERATION_HARD_LIMIT_GRACE_S


def enqueue_iteration(execution_id: str, iteration: int) -> None:
    """Per-task soft/hard limits from the execution's resolved iteration_timeout."""
    soft, hard = _iteration_limits(execution_id)
    run_iteration.apply_async((execution_id, iteration), soft_time_limit=soft, time_limit=hard)


@shared_task(name="tarsy.tasks.finish_session", **_RELIABLE)
def finish_session(session_id: str) -> None:
    from tarsy.pipeline.finish import session_finish
    from tarsy.pipeline.dispatch import dispatch_pending

    session_finish(session_id=session_id)
    dispatch_pending()  # a slot may have freed


@shared_task(name="tarsy.tasks.reap_session", **_RELIABLE)
def reap_session(session_id: str) -> None:
    """After a cancel: close the session once nothing of it is running any more."""
    from tarsy.pipeline.sweeper import reap_cancelled

    reap_cancelled(session_id=session_id)


@shared_task(name="tarsy.tasks.sweep", **_RELIABLE)
def sweep() -> None:
    from tarsy.pipeline.sweeper import sweep_once

    sweep_once()


@shared_task(name="tarsy.tasks.apply_retention", **_RELIABLE)
def apply_retention() -> None:
    from tarsy.pipeline.retention import retention_apply

    retention_apply()
