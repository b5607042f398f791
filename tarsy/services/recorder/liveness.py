"""Liveness of a running step: whether it must stop (cancelled, timed out), and its heartbeat.

One `Liveness` per step, on the ExecutionContext (`ctx.liveness`). Controllers ask it at every boundary
(between chunks, between tool calls) whether to stop; the check is throttled, so asking is cheap.

The heartbeats of every step in flight in a process are stamped by one thread of that process (`_Heartbeats`),
every `HEARTBEAT_INTERVAL_S`, two UPDATEs for all of them. A step never stamps its own: a worker carrying a
thousand LLM-bound iterations would otherwise borrow a pooled connection for two statements at the first chunk
after each wait, when its completion needs one too. A step that lasts less than an interval needs no beat: its
claim stamped both heartbeats, and its completion stamps the execution's.

The stop check stays the step's own (one SELECT at a boundary, at most every `STOP_CHECK_INTERVAL_S`): read for
all steps by that thread instead, it cost a worker at a thousand iterations in flight more CPU than it saved
(one run each of `python -m tests.bench.concurrency -c 1000`: 139 s against 117 s of worker CPU): its rounds
read every step twice a second, where a step waiting seconds on its model reaches a boundary once per reply.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections import defaultdict
from collections.abc import Iterable
from functools import partial
from typing import Any

from django.db import connections
from django.db.models import Q, Subquery
from django.utils import timezone

from tarsy.db_connections import reconnecting
from tarsy.models import AgentExecution, AlertSession, SessionStatus

STOP_CHECK_INTERVAL_S = 0.5  # cancellation must be seen within a couple of seconds
HEARTBEAT_INTERVAL_S = 5.0  # far below the sweeper's orphan threshold

log = logging.getLogger(__name__)


class Liveness:
    """`session_deadline`: epoch seconds after which the step stops as timed out (None: no limit, a chat).
    `stop_checked`: the caller has just seen the session running, so the first check can wait an interval.
    `attempt`: the fencing token of the claim the step runs under (AgentExecution.attempt): a heartbeat is an
    attempt's write like any other, so once a later attempt holds the execution this one's beats land nowhere.
    The process's heartbeat thread beats for it from creation until `end()`."""

    def __init__(self, *, session_id: Any, execution_id: Any, session_deadline: float | None = None,
                 stop_checked: bool = False, attempt: int | None = None):
        self.session_id = session_id
        self.execution_id = execution_id
        self.attempt = attempt
        self.session_deadline = session_deadline
        self._last_stop_check = time.monotonic() if stop_checked else 0.0
        self._stop_reason: str | None = None
        _heartbeats.add(self)

    def end(self) -> None:
        """The step is over: no more heartbeats for it."""
        _heartbeats.discard(self)

    def stop_reason(self) -> str | None:
        """'cancelled' or 'timed_out' once the step must stop at this boundary, else None."""
        if self._stop_reason:
            return self._stop_reason
        now = time.monotonic()
        if now - self._last_stop_check < STOP_CHECK_INTERVAL_S:
            return None
        self._last_stop_check = now
        status, execution_status = reconnecting(self._statuses)
        if status in (SessionStatus.CANCELLING, SessionStatus.CANCELLED):
            self._stop_reason = "cancelled"
        elif status == SessionStatus.TIMED_OUT or (self.session_deadline and time.time() > self.session_deadline):
            self._stop_reason = "timed_out"
        elif execution_status in ("cancelled", "timed_out"):
            self._stop_reason = "cancelled"
        return self._stop_reason

    def _statuses(self) -> tuple[str | None, str | None]:
        """The session's and the execution's status in one query; `order_by()`: a one-row read needs none of the
        model's ordering, whose joins (the stage, the session) first() would add."""
        if self.execution_id:
            row = (AgentExecution.objects.filter(id=self.execution_id).order_by()
                   .values_list("session__status", "status").first())
            return row or (None, None)
        status = (AlertSession.all_objects.filter(id=self.session_id).order_by()
                  .values_list("status", flat=True).first())
        return status, None


def heartbeats_stamp(steps: Iterable[Liveness]) -> None:
    """Stamp the heartbeats of `steps`: their executions while their attempts still hold them (one UPDATE), then the
    sessions of those executions and of steps without one (one UPDATE). A superseded attempt stamps nothing: a
    later attempt owns the execution and its session now, and the sweeper's judgement rests on those stamps."""
    by_attempt: dict[int | None, list[Any]] = defaultdict(list)
    sessions_alone = []
    for step in steps:
        if step.execution_id:
            by_attempt[step.attempt].append(step.execution_id)
        else:
            sessions_alone.append(step.session_id)
    held = Q(pk__in=[])
    for attempt, ids in by_attempt.items():
        held |= Q(id__in=ids) if attempt is None else Q(id__in=ids, attempt=attempt)
    stamp = timezone.now()
    if by_attempt:
        AgentExecution.objects.filter(held).update(last_heartbeat_at=stamp)
    if by_attempt or sessions_alone:
        AlertSession.all_objects.filter(
            Q(id__in=Subquery(AgentExecution.objects.filter(held).values("session_id"))) | Q(id__in=sessions_alone)
        ).update(last_heartbeat_at=stamp)


class _Heartbeats:
    """The process's heartbeat thread and the steps it beats for. It runs while there are steps (started by the
    first, ended when none is left) and gives its connection back after each round. Weak references: a step
    that never calls `end()` (a test driving a controller by hand) leaves with its context."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: weakref.WeakSet[Liveness] = weakref.WeakSet()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def add(self, step: Liveness) -> None:
        with self._lock:
            if self._pid != os.getpid():  # a forked child (a prefork worker) starts afresh
                self._steps, self._thread, self._pid = weakref.WeakSet(), None, os.getpid()
            self._steps.add(step)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tarsy-heartbeats", daemon=True)
                self._thread.start()

    def discard(self, step: Liveness) -> None:
        with self._lock:
            self._steps.discard(step)

    def _run(self) -> None:
        while True:
            time.sleep(HEARTBEAT_INTERVAL_S)
            with self._lock:
                steps = list(self._steps)
                if not steps:
                    self._thread = None
                    return
            try:
                reconnecting(partial(heartbeats_stamp, steps))
            except Exception:  # a database away longer than a reconnect: the next round tries again
                log.exception("heartbeats of %d steps in flight could not be stamped", len(steps))
            finally:
                del steps
                connections.close_all()  # back to the pool (or closed, without one) until the next round


_heartbeats = _Heartbeats()
