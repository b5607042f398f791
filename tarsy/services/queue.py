"""The dispatch queue: pending sessions in queue order, the free slots under `queue.max_concurrent_sessions`, and
the claim that starts one. Dispatchers are serialised (`sessions_lock_dispatch`): counting and claiming are one
step (tarsy.pipeline.dispatch)."""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from tarsy.models import ACTIVE_SESSION_STATUSES, AlertSession, SessionStatus
from tarsy.selectors import queue

from .sessions import publish_session_status

_DISPATCH_LOCK_KEY = 7_100_001  # PostgreSQL advisory lock serialising count-then-claim across workers


def sessions_lock_dispatch() -> None:
    """Serialise dispatchers until the transaction ends: counting free slots and claiming must be atomic.
    SQLite (embedded) runs IMMEDIATE transactions, which are already serial."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_DISPATCH_LOCK_KEY])


def sessions_active_count() -> int:
    return AlertSession.objects.filter(status__in=ACTIVE_SESSION_STATUSES).count()


def sessions_pending_next(*, limit: int) -> list[AlertSession]:
    """The next `limit` pending sessions in queue order (severity, then age; tarsy.selectors.queue). Not locked
    and nothing skipped: dispatchers are serialised by `sessions_lock_dispatch` and each claim is a
    compare-and-set, which waits for a row another transaction holds. Skipping locked rows would pass over a
    queued session while intake attaches a repeat to it, and during a storm of repeats that is all the time."""
    return list(queue.in_queue_order(AlertSession.objects.all())[:limit])


def session_claim(*, session: AlertSession, worker_id: str, now: datetime) -> bool:
    """Compare-and-set pending → in_progress for `worker_id`; `session` is refreshed and its status published."""
    claimed = AlertSession.objects.filter(id=session.id, status=SessionStatus.PENDING).update(
        status=SessionStatus.IN_PROGRESS, worker_id=worker_id, started_at=now, last_heartbeat_at=now
    )
    if not claimed:
        return False
    session.refresh_from_db()
    publish_session_status(session)
    return True
