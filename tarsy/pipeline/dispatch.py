"""Claim pending sessions without ever exceeding `queue.max_concurrent_sessions` across all workers, and
coalesce the requests for a dispatch that alert intake makes."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from agents.prompts.injection import injection_signals
from agents.timeline_events import TimelineEventType, event_metadata
from tarsy.config import get_config
from tarsy.models import AlertSession
from tarsy.services import queue, stages, timeline

from .budget import daily_limit_reached

log = logging.getLogger(__name__)

# An investigation takes minutes: starting it up to 0.2 s later goes unseen, while under a stream of alerts each
# web process queues at most 5 dispatch tasks a second (each costs it about a third of an alert's CPU).
DISPATCH_COALESCE_S = 0.2
_dispatch_lock = threading.Lock()
_dispatch_timer: threading.Timer | None = None


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# The dispatchers of one process take turns here, holding no database connection, rather than in the advisory
# lock (services.queue), where each would hold a pooled one while it waits: a threads worker finishing hundreds
# of sessions would lend its whole pool to dispatchers queued behind one another. One runs and one waits; a third
# returns at once, as the waiting one starts after it was called and so claims what it would have.
_dispatch_turns = threading.BoundedSemaphore(2)
_dispatch_serial = threading.Lock()


def dispatch_pending() -> list[str]:
    """Claim as many pending sessions (in queue order: severity, then age) as there are free slots and start
    their first stage."""
    if not _dispatch_turns.acquire(blocking=False):
        return []
    try:
        with _dispatch_serial:
            return _dispatch()
    finally:
        _dispatch_turns.release()


def _dispatch() -> list[str]:
    cap = get_config().queue.max_concurrent_sessions
    started: list[str] = []
    if daily_limit_reached():  # today's spend is used up: everything pending waits (a system warning says so)
        return started
    with transaction.atomic():
        queue.sessions_lock_dispatch()
        free = cap - queue.sessions_active_count()
        if free <= 0:
            return started
        now = timezone.now()
        for session in queue.sessions_pending_next(limit=free):
            if not queue.session_claim(session=session, worker_id=worker_id(), now=now):
                continue
            _flag_instruction_shaped_alert(session)
            stages.stage_start_chain(session=session, chain_stage_index=0)
            started.append(str(session.id))
    if started:
        log.info("dispatched %d session(s): %s", len(started), ", ".join(started))
    return started


def _flag_instruction_shaped_alert(session: AlertSession) -> None:
    """Alert data that reads like instructions to the model is marked once, as the session's first event; every
    prompt carries it fenced as data with a warning not to follow it (agents.prompts.builder)."""
    signals = injection_signals(session.alert_data or "")
    if not signals:
        return
    log.warning("alert of session %s reads like instructions to the model (%s)", session.id, ", ".join(signals))
    timeline.timeline_event_create(
        session_id=session.id, event_type=TimelineEventType.ERROR, status="failed",
        content=f"Suspected prompt injection: the alert data reads like instructions to the model "
                f"({', '.join(signals)}). The agents get it as data, with a warning not to follow it.",
        metadata=event_metadata(TimelineEventType.ERROR, source="alert", warning=True, suspected_injection=True))


def request_dispatch(*, send: Callable[[], object]) -> None:
    """Have pending sessions dispatched within DISPATCH_COALESCE_S: `send` queues the dispatch task (tarsy.tasks
    passes it). Alerts arriving together share one dispatch task: a burst of intake would otherwise queue a task
    per alert, each publish costing the web process and each task claiming under the same advisory lock. Call it
    after the session row commits: should this process die before the timer fires, the sweeper dispatches what
    is pending."""
    global _dispatch_timer
    with _dispatch_lock:
        if _dispatch_timer is not None:
            return
        _dispatch_timer = threading.Timer(DISPATCH_COALESCE_S, _send_dispatch, args=(send,))
        _dispatch_timer.daemon = True
        _dispatch_timer.start()


def _send_dispatch(send: Callable[[], object]) -> None:
    global _dispatch_timer
    with _dispatch_lock:
        _dispatch_timer = None  # an alert committed from now on asks for a dispatch of its own
    try:
        send()
    except Exception:  # the broker is away: the sweeper dispatches pending sessions once it is back
        log.warning("could not queue a dispatch; the sweeper will", exc_info=True)
