"""Claim pending sessions without ever exceeding `queue.max_concurrent_sessions` across all workers."""

from __future__ import annotations

import logging
import os
import socket

from django.db import connection, transaction
from django.utils import timezone

from tarsy.config import get_config
from tarsy.models import ACTIVE_SESSION_STATUSES, AlertSession, SessionStatus

from .stages import stage_start_chain

log = logging.getLogger(__name__)

_DISPATCH_LOCK_KEY = 7_100_001  # PostgreSQL advisory lock serialising count-then-claim across workers


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _serialise_dispatchers() -> None:
    # SQLite (embedded) runs IMMEDIATE transactions, which are already serial.
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_DISPATCH_LOCK_KEY])


def dispatch_pending() -> list[str]:
    """Claim as many pending sessions (oldest first) as there are free slots and start their first stage."""
    cap = get_config().queue.max_concurrent_sessions
    started: list[str] = []
    with transaction.atomic():
        _serialise_dispatchers()
        active = AlertSession.objects.filter(status__in=ACTIVE_SESSION_STATUSES).count()
        free = cap - active
        if free <= 0:
            return started
        pending = list(
            AlertSession.objects.select_for_update(skip_locked=True)
            .filter(status=SessionStatus.PENDING)
            .order_by("created_at")[:free]
        )
        now = timezone.now()
        for session in pending:
            claimed = AlertSession.objects.filter(id=session.id, status=SessionStatus.PENDING).update(
                status=SessionStatus.IN_PROGRESS, worker_id=worker_id(), started_at=now, last_heartbeat_at=now
            )
            if not claimed:
                continue
            session.refresh_from_db()
            from tarsy.services.sessions import publish_session_status

            publish_session_status(session)
            stage_start_chain(session, 0)
            started.append(str(session.id))
    if started:
        log.info("dispatched %d session(s): %s", len(started), ", ".join(started))
    return started
