"""Re-drive the tasks a broker restart lost, as soon as the broker is back.

A Redis that restarts has lost the tasks that waited in it: all of them without persistence, the last second's
with an append-only file. The database knows which work should have a task queued: an execution of a live
session that no task holds (no lease) and that has not moved since before the broker started, and a session whose
stages are all closed but which is not finished. A worker checks at every connection to the broker
(tarsy.celery.BrokerRestartWatch): it swaps the broker's run id into a key the broker holds for TARSy (`SET … GET`,
so one process per restart sees the change) and, on a change, re-drives that work at once instead of leaving it
to the sweeper's orphan threshold. While the broker keeps running nothing is re-driven, however long its queue:
a connection blip or a worker restart finds the same run id. A task queued just as the broker started may be
re-driven needlessly; its duplicate is a no-op by the claim's state guard and fence. A re-drive is not a resume:
the execution lost no worker, so its resume count stays.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tarsy.decisions import DispatchSessions, FinishSession, RunIteration, enact_on_commit
from tarsy.services import executions, sessions, stages

log = logging.getLogger(__name__)

RUN_ID_KEY = "broker-run-id"  # under the deployment's prefix: one TARSy per Redis database may share a server
UPTIME_SLACK_S = 1  # the broker reports whole seconds up: count its start a second late (a duplicate, not a loss)


@dataclass(frozen=True)
class BrokerStart:
    """The broker restarted: the run id TARSy had seen (None: the broker holds no trace of TARSy) and when the
    new run started, by this host's clock."""

    previous_run_id: str | None
    run_id: str
    started_at: datetime


def broker_restart_seen(client) -> BrokerStart | None:
    """Swap the broker's run id into its TARSy key; a BrokerStart when it differs from what was there (a restart,
    a flush, or the first connection of a deployment), None when this run was already seen. `client`: redis-py."""
    server = client.info("server")
    run_id = str(server["run_id"])
    previous = client.set(f"{settings.EVENTS_PREFIX}:{RUN_ID_KEY}", run_id, get=True)
    previous = previous.decode() if isinstance(previous, bytes) else previous
    if previous == run_id:
        return None
    started_at = timezone.now() - timedelta(seconds=int(server["uptime_in_seconds"]) - UPTIME_SLACK_S)
    return BrokerStart(previous, run_id, started_at)


@dataclass(frozen=True)
class Redriven:
    iterations: int
    finishes: int


def lost_redrive(*, since: datetime) -> Redriven:
    """Queue again what waited for a task from before `since` (the broker's start): the current iteration of each
    execution no task holds, and the finish of each session whose stages all closed. Pending sessions are
    dispatched as well (every sweep does it too; here it need not wait for one)."""
    waiting = [e for e in executions.executions_orphaned(now=timezone.now(), stale=since)
               if e.lease_expires_at is None]  # an expired lease is a lost worker: the sweeper resumes it
    finishing = [s for s in sessions.sessions_silent_since(before=since)
                 if stages.stages_all_closed(session_id=s.id)]
    with transaction.atomic():
        enact_on_commit([RunIteration(str(e.id), next_iteration(e), e.iteration_timeout_s) for e in waiting]
                        + [FinishSession(str(s.id)) for s in finishing] + [DispatchSessions()])
    return Redriven(len(waiting), len(finishing))


def next_iteration(execution) -> int:
    """The iteration an execution without a task runs next: the one it had claimed, if unfinished."""
    return max(execution.current_iteration, execution.iterations_completed + 1)


def broker_check(url: str) -> Redriven | None:
    """One check of the broker at `url` (a worker's connection to it, tarsy.celery): re-drive if it restarted."""
    import redis

    with redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=10) as client:
        start = broker_restart_seen(client)
    if start is None:
        return None
    done = lost_redrive(since=start.started_at)
    log.log(logging.WARNING if done.iterations or done.finishes else logging.INFO,
            "the broker restarted (run %s, was %s): re-drove %d iteration(s) and %d session finish(es) queued "
            "before %s", start.run_id, start.previous_run_id or "none on record", done.iterations, done.finishes,
            start.started_at.isoformat(timespec="seconds"))
    return done
