"""Liveness of a running step: its heartbeat, and whether it must stop (cancelled, timed out).

One object per step, on the ExecutionContext (`ctx.liveness`). Controllers ask it at every boundary
(between chunks, between tool calls); both the heartbeat and the stop check are throttled, so asking is cheap.
"""

from __future__ import annotations

import time
from typing import Any

from django.utils import timezone

from tarsy.db_connections import reconnecting
from tarsy.models import AgentExecution, AlertSession, SessionStatus

STOP_CHECK_INTERVAL_S = 0.5  # cancellation must be seen within a couple of seconds
HEARTBEAT_INTERVAL_S = 5.0  # far below the sweeper's orphan threshold


class Liveness:
    """`session_deadline`: epoch seconds after which the step stops as timed out (None: no limit, a chat).
    `stop_checked`: the caller has just seen the session running, so the first check can wait an interval.
    `attempt`: the fencing token of the claim the step runs under (AgentExecution.attempt): a heartbeat is an
    attempt's write like any other, so once a later attempt holds the execution this one's beats land nowhere."""

    def __init__(self, *, session_id: Any, execution_id: Any, session_deadline: float | None = None,
                 stop_checked: bool = False, attempt: int | None = None):
        self.session_id = session_id
        self.execution_id = execution_id
        self.attempt = attempt
        self.session_deadline = session_deadline
        self._last_stop_check = time.monotonic() if stop_checked else 0.0
        self._stop_reason: str | None = None
        # The iteration's claim has just stamped both heartbeats: the next one is due an interval from now.
        self._last_heartbeat = time.monotonic()

    def heartbeat(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_heartbeat < HEARTBEAT_INTERVAL_S:
            return
        self._last_heartbeat = now
        reconnecting(self._beat)

    def _beat(self) -> None:
        stamp = timezone.now()
        if self.execution_id:
            held = AgentExecution.objects.filter(id=self.execution_id)
            if self.attempt is not None:
                held = held.filter(attempt=self.attempt)
            if not held.update(last_heartbeat_at=stamp):
                return  # superseded (or gone): the session's liveness is the current attempt's to stamp
        AlertSession.all_objects.filter(id=self.session_id).update(last_heartbeat_at=stamp)

    def stop_reason(self) -> str | None:
        """'cancelled' or 'timed_out' once the step must stop at this boundary, else None; beats when due."""
        self.heartbeat()
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
