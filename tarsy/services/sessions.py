"""Alert sessions after intake: status transitions (compare-and-set) and their events, cancellation, soft delete,
the session lock and heartbeat, ending a session's work, the sweeper's and retention's reads. Intake is
tarsy.services.intake; the dispatch queue and its claim, tarsy.services.queue."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from tarsy.decisions import ReapSession, enact_on_commit
from tarsy.errors import Conflict, NotFound
from tarsy.metrics import SESSIONS_TERMINAL
from tarsy.models import (
    ACTIVE_SESSION_STATUSES,
    TERMINAL_EXEC_STATUSES,
    TERMINAL_SESSION_STATUSES,
    AgentExecution,
    AlertSession,
    ExecStatus,
    SessionStatus,
    Stage,
    TriageStatus,
)
from tarsy.signals import session_status_changed
from tarsy.streaming.publisher import SESSIONS_CHANNEL, session_channel

from . import actions, executions, stages, triage
from .events import publish


def session_status_payload(session: AlertSession) -> dict[str, Any]:
    return {
        "session_id": str(session.id),
        "status": session.status,
        "alert_type": session.alert_type,
        "chain_id": session.chain_id,
        "author": session.author,
        "current_stage_index": session.current_stage_index,
        "error_message": session.error_message,
        "created_at": session.created_at.isoformat() if session.created_at else None,
        "started_at": session.started_at.isoformat() if session.started_at else None,
        "completed_at": session.completed_at.isoformat() if session.completed_at else None,
    }


def publish_session_status(session: AlertSession, event_type: str = "session.status", *,
                           seq: int | None = None) -> None:
    """Signal and publish the status of the stored session (call inside the transaction that wrote it); `seq` as
    in `publish`."""
    session_status_changed.send(sender=AlertSession, session=session)
    payload = session_status_payload(session)
    if event_type == "session.completed":
        payload["final_analysis"] = session.final_analysis
        payload["executive_summary"] = session.executive_summary
    publish(event_type, payload, session_id=session.id, channels=[session_channel(session.id), SESSIONS_CHANNEL],
            seq=seq)


def session_get(*, session_id: Any) -> AlertSession:
    try:
        return AlertSession.objects.get(id=session_id)
    except (AlertSession.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound(f"session {session_id} not found") from exc


def session_set_status(
    *, session_id: Any, status: str, from_statuses: tuple[str, ...], **fields: Any
) -> AlertSession | None:
    """Compare-and-set: change status only from one of `from_statuses`; returns the row or None if it lost."""
    now = timezone.now()
    if status in TERMINAL_SESSION_STATUSES:
        fields.setdefault("completed_at", now)
        # Same statement as the status: a finished session is never seen without its triage state.
        fields.setdefault("triage_status", Case(When(triage_status="", then=Value(TriageStatus.NEEDS_REVIEW)),
                                                default=F("triage_status")))
        fields.setdefault("triage_changed_at", Case(When(triage_status="", then=Value(now)),
                                                    default=F("triage_changed_at")))
    updated = AlertSession.all_objects.filter(id=session_id, status__in=from_statuses).update(status=status, **fields)
    if not updated:
        return None
    session = AlertSession.all_objects.get(id=session_id)
    publish_session_status(session, "session.completed" if status in TERMINAL_SESSION_STATUSES else "session.status")
    if status in TERMINAL_SESSION_STATUSES:
        SESSIONS_TERMINAL.labels(status).inc()
        triage.triage_on_finish(session=session)
    return session


@transaction.atomic
def session_cancel(*, session_id: Any) -> AlertSession:
    """Running → cancelling (steps stop at the next boundary); pending → cancelled at once."""
    session = session_get(session_id=session_id)
    if session.status == SessionStatus.PENDING:
        cancelled = session_set_status(session_id=session.id, status=SessionStatus.CANCELLED,
                                       from_statuses=(SessionStatus.PENDING,), error_message="Cancelled by user")
        if cancelled:
            return cancelled
        session.refresh_from_db()
    if session.status == SessionStatus.IN_PROGRESS:
        changed = session_set_status(session_id=session.id, status=SessionStatus.CANCELLING,
                                     from_statuses=(SessionStatus.IN_PROGRESS,))
        if changed:
            enact_on_commit([ReapSession(str(session.id))])
            return changed
    if session.is_terminal and _cancel_running_chat(session):
        return session
    raise Conflict(f"session is {session.status} and cannot be cancelled", {"status": session.status})


def _cancel_running_chat(session: AlertSession) -> bool:
    """On a finished session, cancel means: stop the chat reply in flight, if any. The running step sees its
    execution cancelled and stops; closing a chat stage answers the chat, nothing follows it."""
    running = executions.executions_running_chat(session_id=session.id)
    for execution_id in running:
        ended = executions.execution_mark_ended(execution_id=execution_id, status=ExecStatus.CANCELLED,
                                                error="Cancelled by user")
        if ended is not None:
            stages.stage_join(stage_id=ended.stage_id)
    return bool(running)


@transaction.atomic
def session_soft_delete(*, session_id: Any) -> None:
    session = session_get(session_id=session_id)
    if session.status in ACTIVE_SESSION_STATUSES or session.status == SessionStatus.PENDING:
        raise Conflict("cancel the session before deleting it", {"status": session.status})
    AlertSession.all_objects.filter(id=session.id).update(deleted_at=timezone.now())


def session_find(*, session_id: Any) -> AlertSession | None:
    """The session, soft-deleted or not; None when there is none."""
    return AlertSession.all_objects.filter(id=session_id).first()


def session_lock(*, session_id: Any) -> AlertSession:
    """The session under its row lock (call inside a transaction). FOR NO KEY UPDATE, as for every row lock
    here: it excludes other lockers and writers but not the inserts of rows that refer to it (their foreign key
    takes a KEY SHARE lock), so a writer that stored a session event before numbering it never waits on us
    while we wait on it (services.events)."""
    return AlertSession.all_objects.select_for_update(no_key=True).get(id=session_id)


def session_touch(*, session_id: Any) -> None:
    """A fresh heartbeat: the sweeper leaves the session alone for another orphan threshold."""
    AlertSession.all_objects.filter(id=session_id).update(last_heartbeat_at=timezone.now())


# ---- ending work, sweeping, retention ------------------------------------------------------------------------

def session_work_stop(*, session_id: Any, status: str, error: str) -> None:
    """Mark every unfinished execution and stage of the session with `status` (cancel / timeout)."""
    now = timezone.now()
    unfinished = AgentExecution.objects.filter(session_id=session_id).exclude(status__in=TERMINAL_EXEC_STATUSES)
    actions.actions_settle_ended(execution_ids=list(unfinished.values_list("id", flat=True)), ended_as=status)
    unfinished.update(status=status, error_message=error, completed_at=now, lease_expires_at=None)
    Stage.objects.filter(session_id=session_id).exclude(status__in=TERMINAL_EXEC_STATUSES).update(
        status=status, error_message=error, completed_at=now
    )


def sessions_running_since(*, before: datetime) -> list[AlertSession]:
    """In-progress sessions started before `before` (candidates for the session timeout)."""
    return list(AlertSession.all_objects.filter(status=SessionStatus.IN_PROGRESS, started_at__lt=before))


def sessions_cancelling() -> list[Any]:
    return list(AlertSession.all_objects.filter(status=SessionStatus.CANCELLING).values_list("id", flat=True))


def sessions_silent_since(*, before: datetime) -> list[AlertSession]:
    """In-progress sessions without a heartbeat since `before`."""
    return list(AlertSession.all_objects.filter(status=SessionStatus.IN_PROGRESS, last_heartbeat_at__lt=before))


def sessions_expire(*, created_before: datetime, now: datetime) -> int:
    """Soft-delete finished sessions created before the cutoff; returns how many."""
    return AlertSession.objects.filter(created_at__lt=created_before, status__in=TERMINAL_SESSION_STATUSES).update(
        deleted_at=now)
