"""Celery tasks: thin adapters — ids in, one pipeline call — and `enact`, the one place a decision becomes a task.

The pipeline and the services decide what happens next as values (tarsy.decisions) and hand them to
`enact_on_commit`; `enact`, registered at startup (tarsy.celery.install_enactor), writes them to the outbox and
queues them after the commit (tarsy/outbox.py relays those the broker did not take then).
Nothing else under tarsy/ imports this module. All tasks are idempotent by state guard (`acks_late` +
`reject_on_worker_lost` make redelivery safe). Results are ignored: the database is the result.

Imports of the pipeline are local: Celery imports this module with the `tarsy` package, before Django's apps
are ready.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from tarsy.config import get_config
from tarsy.db_connections import LOST_CONNECTION
from tarsy.decisions import (
    DispatchSessions,
    Enqueued,
    FinishSession,
    ReapSession,
    ReflectSession,
    RunIteration,
    ScoreSession,
    SlackDeliver,
)

log = logging.getLogger(__name__)

_RELIABLE = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}
# A dropped or restarted database connection is transient: Celery retries the task (it is idempotent) with
# exponential backoff rather than lose the step; its Django fixup closes the task's connections after every run,
# so the retry reconnects. Anything else is a recorded failure, never retried blindly.
TRANSIENT_DB_ERRORS = LOST_CONNECTION
MAX_DB_RETRIES = 8
MAX_DB_RETRY_DELAY_S = 30
_RETRIED = {**_RELIABLE, "autoretry_for": TRANSIENT_DB_ERRORS, "retry_backoff": True,
            "retry_backoff_max": MAX_DB_RETRY_DELAY_S, "retry_kwargs": {"max_retries": MAX_DB_RETRIES}}


def enact(decisions: list[Enqueued]) -> None:
    """The enactor, called in the deciding transaction: the decisions are written to the outbox there and their
    tasks queued once it commits; what the broker does not take then, the outbox relay sends (tarsy/outbox.py)."""
    from tarsy.outbox import enqueue_on_commit

    enqueue_on_commit(decisions, send)


def send(decision: Enqueued) -> None:
    """Queue the decision's task now."""
    from tarsy.pipeline.dispatch import request_dispatch

    if isinstance(decision, RunIteration):
        enqueue_iteration(decision.execution_id, decision.iteration, decision.timeout)
    elif isinstance(decision, FinishSession):
        finish_session.delay(decision.session_id)
    elif isinstance(decision, ReapSession):
        reap_session.delay(decision.session_id)
    elif isinstance(decision, DispatchSessions):
        request_dispatch(send=dispatch_sessions.delay)
    elif isinstance(decision, ScoreSession):
        enqueue_scoring(decision.session_id)
    elif isinstance(decision, SlackDeliver):
        slack_deliver.delay(decision.session_id)
    elif isinstance(decision, ReflectSession):
        enqueue_reflection(decision.session_id, decision.trigger)
    else:
        raise TypeError(f"cannot enqueue {decision!r}")


@shared_task(name="tarsy.tasks.dispatch_sessions", **_RETRIED)
def dispatch_sessions() -> None:
    from tarsy.pipeline.dispatch import dispatch_pending

    dispatch_pending()


@shared_task(name="tarsy.tasks.run_iteration", **_RETRIED)
def run_iteration(execution_id: str, iteration: int) -> None:
    from tarsy.pipeline.iteration import iteration_run

    iteration_run(execution_id, iteration)


def enqueue_iteration(execution_id: str, iteration: int, timeout: float) -> None:
    """Per-task soft/hard limits from the execution's resolved iteration_timeout (AgentExecution row)."""
    soft = min(timeout or get_config().defaults.iteration_timeout, settings.MAX_ITERATION_TIMEOUT_S)
    run_iteration.apply_async((execution_id, iteration), soft_time_limit=soft,
                              time_limit=soft + settings.ITERATION_HARD_LIMIT_GRACE_S)


@shared_task(name="tarsy.tasks.finish_session", **_RETRIED)
def finish_session(session_id: str) -> None:
    from tarsy.pipeline.dispatch import dispatch_pending
    from tarsy.pipeline.finish import session_finish

    session_finish(session_id=session_id)
    dispatch_pending()  # a slot may have freed


@shared_task(name="tarsy.tasks.reap_session", **_RELIABLE)
def reap_session(session_id: str) -> None:
    """After a cancel: close the session once nothing of it is running any more."""
    from tarsy.pipeline.sweeper import reap_cancelled

    reap_cancelled(session_id=session_id)


SCORING_GRACE_S = 30  # past the scorer's own deadline: the task is stopped and the score stored as failed


def enqueue_scoring(session_id: str) -> None:
    """A scorer that never answers must not hold a worker: the task's limits follow scoring.timeout."""
    soft = min(get_config().scoring.timeout + SCORING_GRACE_S, settings.MAX_ITERATION_TIMEOUT_S)
    score_session.apply_async((session_id,), soft_time_limit=soft,
                              time_limit=soft + settings.ITERATION_HARD_LIMIT_GRACE_S)


@shared_task(name="tarsy.tasks.score_session", **_RETRIED)
def score_session(session_id: str) -> None:
    """Background scoring of a completed session; its outcome (or error) is stored, the session is untouched."""
    from tarsy.pipeline.scoring import session_score

    session_score(session_id=session_id)


def enqueue_reflection(session_id: str, trigger: str) -> None:
    """Like scoring: the task's limits follow memory.timeout, so a reflector that never answers frees the worker."""
    soft = min(get_config().memory.timeout + SCORING_GRACE_S, settings.MAX_ITERATION_TIMEOUT_S)
    reflect_session.apply_async((session_id, trigger), soft_time_limit=soft,
                                time_limit=soft + settings.ITERATION_HARD_LIMIT_GRACE_S)


@shared_task(name="tarsy.tasks.reflect_session", **_RETRIED)
def reflect_session(session_id: str, trigger: str) -> None:
    """Learn memories from a session (investigation memory); the session itself is untouched."""
    from tarsy.pipeline.memory.reflect import session_reflect

    session_reflect(session_id=session_id, trigger=trigger)


@shared_task(name="tarsy.tasks.slack_deliver", **_RETRIED)
def slack_deliver(session_id: str) -> None:
    """Post or update the session's Slack message and thread; run again when delivery asks to (backoff,
    Retry-After, the update throttle). Never touches the investigation."""
    from tarsy.slack.delivery import deliver

    again_in = deliver(session_id=session_id)
    if again_in is not None:
        slack_deliver.apply_async((session_id,), countdown=again_in)


@shared_task(name="tarsy.tasks.sweep", **_RELIABLE)
def sweep() -> None:
    from tarsy.pipeline.sweeper import sweep_once

    sweep_once()


@shared_task(name="tarsy.tasks.apply_retention", **_RELIABLE)
def apply_retention() -> None:
    from tarsy.pipeline.retention import retention_apply

    retention_apply()


@shared_task(name="tarsy.tasks.run_check", **_RETRIED)
def run_check(name: str) -> None:
    """Beat's entry for a proactive check (tarsy.celery.schedule_checks): queue a run through intake. A run
    still in flight or a check gone from the configuration since beat started is logged, not retried."""
    from tarsy.errors import Conflict, NotFound
    from tarsy.services.checks import check_run

    try:
        session = check_run(name=name)
    except (Conflict, NotFound) as exc:
        log.warning("check %s not run: %s", name, exc.message)
        return
    log.info("check %s: session %s", name, session.id)
