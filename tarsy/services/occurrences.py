"""Alerts that join an existing session: repeats of its alert (occurrences) and alerts of its group (related).

Intake (`intake.alerts.session_receive`) looks for the session and attaches the alert inside one transaction that
holds an advisory lock per fingerprint and per group, so concurrent posts from any number of threads and web
processes see each other's sessions: one investigation per fingerprint, one per group.
"""

from __future__ import annotations

import zlib
from datetime import timedelta
from typing import Any

from django.db import connection
from django.db.models import F, Q
from django.utils import timezone

from tarsy.metrics import ALERTS_ATTACHED
from tarsy.models import AlertOccurrence, AlertSession, OccurrenceKind, SessionStatus
from tarsy.signals import alert_attached
from tarsy.streaming.publisher import SESSIONS_CHANNEL, session_channel

from .events import publish

_FINGERPRINT_LOCK = 7_100_002  # advisory lock class of one fingerprint (second key: its hash)
_GROUP_LOCK = 7_100_003  # advisory lock class of one correlation group


def _lock_key(text: str) -> int:
    return zlib.crc32(text.encode("utf-8")) - 2**31  # a signed 32-bit key; a collision only serialises two posts


def alert_identity_lock(*, alert_type: str, fingerprint: str, chain_id: str, group_key: str) -> None:
    """Serialise intake of alerts sharing the fingerprint or the group until the transaction ends; always the
    group first, so two posts never wait on each other crosswise. SQLite (embedded) runs IMMEDIATE transactions,
    which are already serial."""
    if connection.vendor != "postgresql":
        return
    keys = []
    if group_key:
        keys.append((_GROUP_LOCK, _lock_key(f"{chain_id}\n{group_key}")))
    if fingerprint:
        keys.append((_FINGERPRINT_LOCK, _lock_key(f"{alert_type}\n{fingerprint}")))
    with connection.cursor() as cursor:
        for lock_class, key in keys:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [lock_class, key])


def session_with_fingerprint(*, alert_type: str, fingerprint: str, window: float) -> AlertSession | None:
    """The session already on this alert: queued or in progress, completed less than `window` seconds ago, or
    silenced under a silence still in force (its repeats during a maintenance window fold into it; once the
    window ends the alert starts an investigation)."""
    now = timezone.now()
    recent = now - timedelta(seconds=window)
    return (AlertSession.objects.filter(alert_type=alert_type, fingerprint=fingerprint)
            .filter(Q(status__in=(SessionStatus.PENDING, SessionStatus.IN_PROGRESS))
                    | Q(status=SessionStatus.COMPLETED, completed_at__gte=recent)
                    | Q(status=SessionStatus.SILENCED, silenced_by__ends_at__gt=now))
            .order_by("-created_at").first())


def group_lead(*, chain_id: str, group_key: str, window: float) -> AlertSession | None:
    """The group's first session, when it started less than `window` seconds ago and still investigates."""
    since = timezone.now() - timedelta(seconds=window)
    return (AlertSession.objects.filter(chain_id=chain_id, group_key=group_key, created_at__gte=since,
                                        status__in=(SessionStatus.PENDING, SessionStatus.IN_PROGRESS))
            .order_by("created_at").first())


def occurrence_attach(*, session: AlertSession, kind: str, alert_type: str, fingerprint: str, severity: str,
                      alert_data: str, author: str) -> AlertSession:
    """Keep the alert on `session` and count it; the session's new counts go to its page and the list."""
    now = timezone.now()
    AlertOccurrence.objects.create(session=session, kind=kind, alert_type=alert_type, fingerprint=fingerprint[:128],
                                   severity=severity, alert_data=alert_data, author=author[:255])
    counter = "occurrence_count" if kind == OccurrenceKind.OCCURRENCE else "related_count"
    AlertSession.all_objects.filter(id=session.id).update(**{counter: F(counter) + 1, "last_seen_at": now})
    session.refresh_from_db(fields=["occurrence_count", "related_count", "last_seen_at", "status"])
    publish("session.occurrence", occurrence_payload(session, kind), session_id=session.id,
            channels=[session_channel(session.id), SESSIONS_CHANNEL])
    alert_attached.send(sender=AlertSession, session=session, data=alert_data, kind=kind)
    ALERTS_ATTACHED.labels(kind).inc()
    return session


def occurrence_payload(session: AlertSession, kind: str) -> dict[str, Any]:
    return {"session_id": str(session.id), "kind": kind, "status": session.status,
            "occurrence_count": session.occurrence_count, "related_count": session.related_count,
            "last_seen_at": session.last_seen_at.isoformat() if session.last_seen_at else None}


def related_after(*, session_id: Any, delivered: set[int]) -> list[AlertOccurrence]:
    """Related alerts of the session not yet in an execution's context (`delivered`: ids it has), one per
    fingerprint: a repeat of a related alert already shown adds nothing the model needs."""
    shown = set(AlertOccurrence.objects.filter(id__in=delivered).values_list("fingerprint", flat=True))
    fresh: list[AlertOccurrence] = []
    for row in AlertOccurrence.objects.filter(session_id=session_id, kind=OccurrenceKind.RELATED).exclude(
            id__in=delivered).order_by("id"):
        if row.fingerprint and row.fingerprint in shown:
            continue
        shown.add(row.fingerprint)
        fresh.append(row)
    return fresh
