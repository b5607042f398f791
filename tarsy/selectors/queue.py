"""The order of the queue: severity first, then age, with a queued alert's priority rising as it waits.

Each pending session is ranked by `created_at + rank × priority_aging` (rank 0 critical … 3 info; +4 under a
`low_priority` silence): among alerts
that arrived together the most severe goes first, and an alert that has waited one aging period longer than
another counts one severity level higher. The key never changes while a session waits, so dispatch, the queue
positions of the dashboard and the API all read the same order from the database.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Case, DurationField, F, Q, QuerySet, Value, When

from tarsy.config import get_config
from tarsy.models import AlertSession, SessionStatus, Severity

SEVERITY_RANK: dict[str, int] = {Severity.CRITICAL: 0, Severity.HIGH: 1, Severity.WARNING: 2, Severity.INFO: 3}
# A session under a `low_priority` silence counts this many severity levels lower: behind an info alert that
# arrived at the same time, still dispatched once it has waited that many aging periods longer.
LOW_PRIORITY_LEVELS = 4


def _delay(severity: str, aging: float) -> timedelta:
    return timedelta(seconds=SEVERITY_RANK.get(severity, SEVERITY_RANK[Severity.WARNING]) * aging)


def _low_priority(aging: float) -> timedelta:
    return timedelta(seconds=LOW_PRIORITY_LEVELS * aging)


def queue_key(session: AlertSession) -> datetime:
    """When the session's turn comes in the queue's order (earlier goes first)."""
    aging = get_config().queue.priority_aging
    low = _low_priority(aging) if session.silenced_by_id else timedelta(0)
    return session.created_at + _delay(session.severity, aging) + low


def in_queue_order(rows: QuerySet) -> QuerySet:
    """Pending sessions in the order dispatch claims them (annotated `queue_key`). A pending session with a
    silence arrived under a `low_priority` one (a `skip` silence never leaves one pending)."""
    aging = get_config().queue.priority_aging
    delay = Case(*(When(severity=s, then=Value(_delay(s, aging))) for s in SEVERITY_RANK),
                 default=Value(_delay(Severity.WARNING, aging)), output_field=DurationField())
    low = Case(When(silenced_by__isnull=False, then=Value(_low_priority(aging))), default=Value(timedelta(0)),
               output_field=DurationField())
    return rows.filter(status=SessionStatus.PENDING).annotate(queue_key=F("created_at") + delay + low).order_by(
        "queue_key", "created_at", "id")


def queue_ahead_count(session: AlertSession) -> int:
    """How many pending sessions dispatch claims before `session`."""
    key = queue_key(session)
    ahead = (Q(queue_key__lt=key) | Q(queue_key=key, created_at__lt=session.created_at)
             | Q(queue_key=key, created_at=session.created_at, id__lt=session.id))
    return in_queue_order(AlertSession.objects.all()).filter(ahead).count()


def queue_position(session: AlertSession) -> int | None:
    """1-based place in the order dispatch claims pending sessions, None when the session is not pending."""
    if session.status != SessionStatus.PENDING:
        return None
    return queue_ahead_count(session) + 1
