"""Webhook deliveries into sessions: firing alerts through `session_receive`, resolutions onto their session.

A delivery is all or nothing (one transaction): a refused alert refuses the delivery with its reason and
nothing of it is stored, so the sender's view and TARSy's never disagree.

A resolution finds the most recent session the alert started (else the one it joined as a related alert) and
records an `alert_resolved` timeline event on it. A session still waiting for a slot is cancelled: nobody needs
an investigation of an alert that is over before it began. A running investigation is not stopped: it already
spends effort on what happened, and its findings explain a self-healed or flapping alert; the event tells the
reader the alert cleared meanwhile. A finished session, or one the alert only joined (its own alert may still
fire), is annotated. The session's own alert resolving withdraws the actions it proposed and never ran
(tarsy.pipeline.actions listens). A resolution the sender repeats (same alert, same time) is recorded once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import OperationalError, connection, transaction

from agents.config.schema import IntakeSourceConfig
from tarsy.config import get_config
from tarsy.errors import ServiceError
from tarsy.intake.items import Batch, Mapped, Resolved
from tarsy.intake.mapping import map_alert
from tarsy.models import AlertOccurrence, AlertSession, OccurrenceKind, SessionStatus, TimelineEvent, TimelineEventType
from tarsy.signals import alert_resolved

from .. import sessions, timeline
from .alerts import AlertReceipt, session_receive


@dataclass
class DeliveryResult:
    """What the webhook answers: sessions started or joined, resolutions applied, events not acted on."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    resolved: list[dict[str, Any]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def source_config(source: str) -> IntakeSourceConfig:
    return getattr(get_config().intake, source)


DELIVERY_ATTEMPTS = 3  # a delivery PostgreSQL aborted to break a deadlock runs again (see intake_deliver)


def intake_deliver(*, source: str, batch: Batch, author: str) -> DeliveryResult:
    """Start (or, through deduplication, join) a session per firing item; resolve the resolved ones.

    Intake locks each alert's fingerprint and group until the delivery commits, so two deliveries sharing
    alerts in opposite orders (two Alertmanager replicas, overlapping groups) can wait on each other; PostgreSQL
    then aborts one, and it runs again from the start, nothing of the aborted attempt kept."""
    for attempt in range(1, DELIVERY_ATTEMPTS + 1):
        try:
            with transaction.atomic():
                return _deliver(source=source, batch=batch, author=author)
        except OperationalError as exc:
            if attempt == DELIVERY_ATTEMPTS or connection.in_atomic_block or not _deadlock(exc):
                raise
    raise AssertionError("unreachable")


def _deadlock(exc: OperationalError) -> bool:
    cause = exc.__cause__
    return (getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)) == "40P01"


def _deliver(*, source: str, batch: Batch, author: str) -> DeliveryResult:
    config = get_config()
    settings = source_config(source)
    result = DeliveryResult(ignored=list(batch.ignored))
    for index, item in enumerate(batch.firing):
        mapped = map_alert(item, settings, allowed_runbook_domains=config.system.runbooks.allowed_domains)
        try:
            receipt = session_receive(data=mapped.data, alert_type=mapped.alert_type, runbook=mapped.runbook,
                                      author=author, fingerprint=mapped.fingerprint, severity=mapped.severity)
        except ServiceError as exc:
            exc.message = f"alert {index}: {exc.message}"
            raise
        warnings = _runbook_refused(mapped, receipt, config.system.runbooks.allowed_domains)
        result.sessions.append({"session_id": str(receipt.session.id), "fingerprint": mapped.fingerprint,
                                "alert_type": receipt.session.alert_type, "severity": receipt.session.severity,
                                "occurrence_count": receipt.session.occurrence_count, "status": receipt.status,
                                "silenced_by": receipt.session.silenced_by_id,
                                "deduplicated": receipt.deduplicated, "related": receipt.related,
                                "warnings": warnings})
    for resolution in batch.resolved:
        result.resolved.append(session_resolve_alert(source=source, resolution=resolution))
    return result


def _runbook_refused(mapped: Mapped, receipt: AlertReceipt, allowed: list[str]) -> list[str]:
    """Why the alert's runbook_url was set aside: in the webhook's reply, and on the timeline of the session the
    alert started (a repeat joining one says it in the reply only)."""
    if not mapped.refused_runbook:
        return []
    from agents.mcp.masking.boundary import mask_url

    url = mask_url(mapped.refused_runbook)
    warning = (f"runbook_url {url} not used: its host is not in system.runbooks.allowed_domains "
               f"({', '.join(allowed) or 'none'}); the default runbook applies")
    if not (receipt.deduplicated or receipt.related):
        timeline.timeline_event_create(session_id=receipt.session.id, event_type=TimelineEventType.ERROR,
                                       content=f"Runbook not used: {warning}",
                                       metadata={"runbook_url": url, "warning": True})
    return [warning]


def _resolved_session(fingerprint: str) -> tuple[Any, bool]:
    """The most recent session started by the alert, else the most recent one it joined as a related alert."""
    own = (AlertSession.objects.filter(fingerprint=fingerprint).order_by("-created_at")
           .values_list("id", flat=True).first())
    if own is not None:
        return own, False
    joined = (AlertOccurrence.objects.filter(fingerprint=fingerprint, kind=OccurrenceKind.RELATED)
              .order_by("-id").values_list("session_id", flat=True).first())
    return joined, True


def session_resolve_alert(*, source: str, resolution: Resolved) -> dict[str, Any]:
    """Cancel a pending session of the alert, annotate any other; see the module docstring for why. A sender
    repeats a resolved alert in later deliveries: the same resolution (fingerprint and time) is recorded once."""
    answer: dict[str, Any] = {"fingerprint": resolution.fingerprint, "session_id": None, "action": "unmatched"}
    session_id, related = _resolved_session(resolution.fingerprint)
    if session_id is None:
        return answer
    session = sessions.session_lock(session_id=session_id)
    answer["session_id"] = str(session.id)
    if TimelineEvent.objects.filter(session_id=session.id, event_type=TimelineEventType.ALERT_RESOLVED,
                                    metadata__fingerprint=resolution.fingerprint,
                                    metadata__resolved_at=resolution.at).exists():
        answer["action"] = "already_resolved"
        return answer
    when = f" at {resolution.at}" if resolution.at else ""
    what = "A related alert" if related else "Alert"
    if session.status == SessionStatus.PENDING and not related:
        sessions.session_set_status(session_id=session.id, status=SessionStatus.CANCELLED,
                                    from_statuses=(SessionStatus.PENDING,),
                                    error_message=f"Alert resolved in {source}{when} before the investigation began")
        action, note = "cancelled", "The queued investigation was cancelled."
    elif session.status in (SessionStatus.IN_PROGRESS, SessionStatus.CANCELLING):
        action, note = "annotated", "The investigation continues: its findings still explain what happened."
    else:
        action, note = "annotated", ""
    content = f"{what} resolved in {source}{when}. {note}".strip()
    timeline.timeline_event_create(
        session_id=session.id, event_type=TimelineEventType.ALERT_RESOLVED, content=content,
        metadata={"source": source, "fingerprint": resolution.fingerprint, "resolved_at": resolution.at,
                  "action": action, "related": related})
    alert_resolved.send(sender=AlertSession, session=session, text=content, related=related)
    answer["action"] = action
    return answer
