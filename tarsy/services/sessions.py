"""Alert sessions: submission, claim, status transitions (compare-and-set), cancellation, soft delete, retention."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

from django.db import connection, transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from agents.config.schema import AlertMaskingConfig
from tarsy.config import get_config
from tarsy.decisions import DispatchSessions, ReapSession, enact_on_commit
from tarsy.errors import Conflict, NotFound, PayloadTooLarge, ValidationFailed
from tarsy.intake.titles import alert_title
from tarsy.metrics import SESSIONS_SUBMITTED, SESSIONS_TERMINAL
from tarsy.models import (
    ACTIVE_SESSION_STATUSES,
    TERMINAL_EXEC_STATUSES,
    TERMINAL_SESSION_STATUSES,
    AgentExecution,
    AlertSession,
    ExecStatus,
    OccurrenceKind,
    SessionStatus,
    Severity,
    SilenceMode,
    Stage,
    TriageStatus,
)
from tarsy.selectors import queue
from tarsy.signals import session_status_changed
from tarsy.streaming.publisher import SESSIONS_CHANNEL, publish, session_channel

from . import actions, executions, fingerprints, occurrences, stages, triage
from .silences import silence_for_alert

MAX_ALERT_DATA_BYTES = 1024 * 1024  # larger alerts are refused with 413


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


def _check_alert_size(text: str) -> None:
    if len(text.encode("utf-8")) > MAX_ALERT_DATA_BYTES:
        raise PayloadTooLarge(f"alert data exceeds {MAX_ALERT_DATA_BYTES} bytes", {"data": ["Too large."]})


def _alert_masked(data: Any, masking: AlertMaskingConfig) -> tuple[Any, str]:
    """The alert masked in the shape it came, and as stored text. Alert data that cannot be masked is
    refused, never stored unmasked; an unexpected masker failure propagates (a JSON 500, nothing stored)."""
    from agents.mcp.masking import MaskingError, mask_alert_data

    if data is None or data == "" or data == {} or data == []:
        raise ValidationFailed("data is required", {"data": ["This field is required and must not be empty."]})
    if isinstance(data, str):
        _check_alert_size(data)  # before masking: refusing is cheaper than masking megabytes first
    try:
        masked = mask_alert_data(data, masking)
        text = masked if isinstance(masked, str) else json.dumps(masked, indent=2, ensure_ascii=False)
    except MaskingError as exc:
        raise ValidationFailed("alert data cannot be masked", {"data": [str(exc)]}) from exc
    except RecursionError as exc:  # masking disabled: the encoder follows the nesting itself
        raise ValidationFailed("alert data is nested too deeply", {"data": ["Nested too deeply."]}) from exc
    _check_alert_size(text)
    return masked, text


def _check_runbook(url: str, allowed: list[str]) -> None:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValidationFailed("invalid runbook URL", {"runbook": ["Must be an http(s) URL."]})
    host = parsed.hostname.lower()
    if not any(host == d or host.endswith("." + d) for d in allowed):
        raise ValidationFailed(
            "runbook host not allowed", {"runbook": [f"Host {host!r} is not in the allowed domains: {allowed}."]}
        )


@dataclass(frozen=True)
class AlertReceipt:
    """What intake answers: the session that investigates the alert, and whether the alert joined it as a repeat
    (`deduplicated`) or as another alert of its group (`related`) instead of starting it."""

    session: AlertSession
    deduplicated: bool = False
    related: bool = False

    @property
    def status(self) -> str:
        """What became of the alert, as every intake endpoint answers it: `attached` (joined a session),
        `silenced` (a new session kept without investigation, under a silence) or `queued`."""
        if self.deduplicated or self.related:
            return "attached"
        return "silenced" if self.session.status == SessionStatus.SILENCED else "queued"


@dataclass(frozen=True)
class _Alert:
    """An alert that passed validation: masked, typed, routed to its chain, with its identity."""

    text: str
    data: Any  # masked, in the shape it came (silences match it)
    title: str
    alert_type: str
    chain_id: str
    severity: str
    fingerprint: str
    group_key: str
    dedup_window: float | None  # None: the chain has dedup off
    group_window: float
    runbook: str
    mcp: dict[str, Any] | None
    author: str
    check_name: str = ""


def session_receive(
    *, data: Any, alert_type: str | None = None, runbook: str | None = None, mcp: dict[str, Any] | None = None,
    author: str = "api-client", fingerprint: str = "", severity: str | None = None, group_key: str = "",
) -> AlertReceipt:
    """Intake's one entry point (REST and webhook adapters). A repeat of an alert whose session is queued, in
    progress or recently completed joins that session as an occurrence; an alert of a group whose first session
    still investigates joins it as related; any other alert is queued as a new session."""
    alert = _alert_validate(data=data, alert_type=alert_type, runbook=runbook, mcp=mcp, author=author,
                            fingerprint=fingerprint, severity=severity, group_key=group_key)
    if alert.dedup_window is None and not alert.group_key:
        # Nothing to look up, so nothing to lock: alike alerts of a chain without dedup are taken in parallel.
        receipt = AlertReceipt(session=_session_create(alert, silences=True))
    else:
        with transaction.atomic():  # the look-up and what follows from it, serialised per fingerprint / group
            occurrences.alert_identity_lock(alert_type=alert.alert_type, chain_id=alert.chain_id,
                                            fingerprint=alert.fingerprint if alert.dedup_window is not None else "",
                                            group_key=alert.group_key)
            receipt = _attach_to_existing(alert) or AlertReceipt(session=_session_create(alert, silences=True))
    if not (receipt.deduplicated or receipt.related):
        SESSIONS_SUBMITTED.labels(alert.alert_type).inc()
    return receipt


def _attach_to_existing(alert: _Alert) -> AlertReceipt | None:
    fields = {"alert_type": alert.alert_type, "fingerprint": alert.fingerprint, "severity": alert.severity,
              "alert_data": alert.text, "author": alert.author}
    if alert.dedup_window is not None:
        same = occurrences.session_with_fingerprint(alert_type=alert.alert_type, fingerprint=alert.fingerprint,
                                                    window=alert.dedup_window)
        if same is not None:
            session = occurrences.occurrence_attach(session=same, kind=OccurrenceKind.OCCURRENCE, **fields)
            return AlertReceipt(session=session, deduplicated=True)
    if alert.group_key:
        lead = occurrences.group_lead(chain_id=alert.chain_id, group_key=alert.group_key, window=alert.group_window)
        if lead is not None:
            session = occurrences.occurrence_attach(session=lead, kind=OccurrenceKind.RELATED, **fields)
            return AlertReceipt(session=session, related=True)
    return None


def _severity(severity: str | None, data: Any, alert_type: str) -> str:
    """The sender's severity; else a known `severity` field of the data; else the alert type's configured one."""
    if severity:
        if severity not in Severity.values:
            raise ValidationFailed(f"unknown severity {severity!r}",
                                   {"severity": [f"Valid severities: {', '.join(Severity.values)}."]})
        return severity
    named = data.get("severity") if isinstance(data, dict) else None
    if isinstance(named, str) and named.strip().lower() in Severity.values:
        return named.strip().lower()
    return get_config().queue.severities.get(alert_type, Severity.WARNING)


def _alert_validate(
    *, data: Any, alert_type: str | None, runbook: str | None, mcp: dict[str, Any] | None, author: str,
    fingerprint: str, severity: str | None, group_key: str, chain_id: str | None = None,
) -> _Alert:
    """`chain_id`: a chain chosen by TARSy itself (a check's), not by the alert type."""
    config = get_config()
    alert_type = alert_type or config.defaults.alert_type
    if chain_id is None:
        chain_id = config.chain_for_alert_type(alert_type)
    elif chain_id not in config.chains:
        raise ValidationFailed(f"unknown chain {chain_id!r}", {"chain": ["No such chain."]})
    if chain_id is None:
        valid = sorted(config.alert_types())
        raise ValidationFailed(
            f"unknown alert type {alert_type!r}", {"alert_type": [f"Valid alert types: {', '.join(valid)}."]}
        )
    severity = _severity(severity, data, alert_type)
    masked, text = _alert_masked(data, config.defaults.alert_masking)
    if runbook:
        _check_runbook(runbook, config.system.runbooks.allowed_domains)
    if mcp:
        from agents.mcp.selection import validate_mcp_selection  # the MCP client stack: ~1 s of imports

        problems = validate_mcp_selection(mcp, config)
        if problems:
            raise ValidationFailed("invalid MCP selection", {"mcp": problems})
    chain = config.chain(chain_id)
    dedup, correlation = chain.dedup, chain.correlation
    from agents.mcp.masking.boundary import mask_text

    if fingerprint:  # a sender's identity may quote labels holding secrets: stored masked like the alert
        fingerprint = mask_text(fingerprint)
    else:
        fingerprint = fingerprints.derive_fingerprint(alert_type=alert_type, data=masked,
                                                      key=dedup.key if dedup else [])
    if correlation is None:
        group_key = ""
    elif group_key:
        group_key = mask_text(group_key)
    else:
        group_key = fingerprints.derive_group_key(data=masked, labels=correlation.labels)
    title = alert_title(masked, template=chain.title_template)
    return _Alert(text=text, data=masked, title=title, alert_type=alert_type, chain_id=chain_id, severity=severity,
                  fingerprint=fingerprint[:128], group_key=group_key[:200],
                  dedup_window=dedup.window if dedup else None,
                  group_window=correlation.window if correlation else 0.0, runbook=runbook or "", mcp=mcp or None,
                  author=author[:255])


def _session_create(alert: _Alert, *, silences: bool) -> AlertSession:
    """A pending session queued for dispatch; with `silences`, one under a `skip` silence is stored `silenced`
    (never dispatched) and one under a `low_priority` silence queued behind the others (tarsy.services.silences)."""
    from agents.mcp.masking.boundary import mask_url

    with transaction.atomic():
        silence = silence_for_alert(alert_type=alert.alert_type, data=alert.data) if silences else None
        skipped = silence is not None and silence.mode == SilenceMode.SKIP
        session = AlertSession(
            alert_data=alert.text, alert_type=alert.alert_type, chain_id=alert.chain_id, agent_type=alert.chain_id,
            title=alert.title,
            runbook_url=mask_url(alert.runbook) if alert.runbook else "", mcp_selection=alert.mcp,
            author=alert.author, fingerprint=alert.fingerprint, severity=alert.severity, group_key=alert.group_key,
            event_seq=1,  # its first event, below: numbered here, as no other writer can see the row yet
            silenced_by=silence, check_name=alert.check_name,
        )
        if skipped:
            session.status, session.completed_at = SessionStatus.SILENCED, timezone.now()
        session.save(force_insert=True)
        publish_session_status(session, seq=1)
        if not skipped:
            enact_on_commit([DispatchSessions()])
    return session


def session_submit(
    *, data: Any, alert_type: str | None = None, runbook: str | None = None, mcp: dict[str, Any] | None = None,
    author: str = "api-client", fingerprint: str = "", severity: str | None = None, chain_id: str | None = None,
    check_name: str = "", silences: bool = False,
) -> AlertSession:
    """Validate an alert and queue it as a new pending session whatever else is queued (evals, replays, tests,
    a check's run: `chain_id` and `check_name`, and `silences` so a maintenance window holds its checks too);
    dispatch happens after commit. Alerts from the outside world come through `session_receive`."""
    alert = _alert_validate(data=data, alert_type=alert_type, runbook=runbook, mcp=mcp, author=author,
                            fingerprint=fingerprint, severity=severity, group_key="", chain_id=chain_id)
    if check_name:
        alert = replace(alert, check_name=check_name, title=f"Check {check_name}")
    session = _session_create(alert, silences=silences)
    SESSIONS_SUBMITTED.labels(alert.alert_type).inc()
    return session


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


# ---- dispatch ------------------------------------------------------------------------------------------------

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
