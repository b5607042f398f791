"""Reads of triage: one session's state with its activity log, and the Triage view's three columns."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Case, Count, QuerySet, Value, When
from django.utils import timezone

from tarsy.models import AlertSession, TriageStatus

from .queue import SEVERITY_RANK

RECENTLY_RESOLVED = timedelta(hours=24)  # a shift and its hand-over: what the next shift should know was closed
COLUMN_LIMIT = 100  # cards per column; the counts are exact however many there are


def session_triage(*, session_id: Any) -> AlertSession | None:
    """The session with `triage_activity` prefetched (oldest first); None when there is none."""
    return AlertSession.objects.prefetch_related("triage_activity").filter(id=session_id).first()


@dataclass
class TriageFilters:
    """The Triage view's filters, already checked: "" (or None) is no filter."""

    assignee: str = ""
    severity: str = ""
    chain_id: str = ""
    score_min: int | None = None
    score_max: int | None = None

    def apply(self, rows: QuerySet) -> QuerySet:
        if self.assignee:
            rows = rows.filter(assignee=self.assignee)
        if self.severity:
            rows = rows.filter(severity=self.severity)
        if self.chain_id:
            rows = rows.filter(chain_id=self.chain_id)
        if self.score_min is not None:
            rows = rows.filter(score__score__gte=self.score_min)
        if self.score_max is not None:
            rows = rows.filter(score__score__lte=self.score_max)
        return rows


@dataclass
class TriageColumn:
    state: str
    title: str
    sessions: list[AlertSession]
    count: int
    groups: list[tuple[str, int]] = field(default_factory=list)  # (assignee or resolution, count), largest first


def _grouped(rows: QuerySet, column: str) -> list[tuple[str, int]]:
    counts = rows.order_by().values_list(column).annotate(n=Count("id")).order_by("-n", column)
    return [(name or "—", n) for name, n in counts]


def _most_severe_first() -> Case:
    return Case(*(When(severity=s, then=Value(rank)) for s, rank in SEVERITY_RANK.items()), default=Value(9))


def triage_board(*, filters: TriageFilters) -> list[TriageColumn]:
    """Needs review (most severe, then waiting longest, first), in progress (by owner), resolved in the last day
    (latest first)."""
    rows = filters.apply(AlertSession.objects.defer("alert_data").select_related("score", "review"))
    waiting = rows.filter(triage_status=TriageStatus.NEEDS_REVIEW)
    working = rows.filter(triage_status=TriageStatus.IN_PROGRESS)
    resolved = rows.filter(triage_status=TriageStatus.RESOLVED,
                           triage_changed_at__gte=timezone.now() - RECENTLY_RESOLVED)
    return [
        TriageColumn(TriageStatus.NEEDS_REVIEW, "Needs review",
                     list(waiting.order_by(_most_severe_first(), "triage_changed_at")[:COLUMN_LIMIT]), waiting.count(),
                     _grouped(waiting, "severity")),
        TriageColumn(TriageStatus.IN_PROGRESS, "In progress",
                     list(working.order_by("assignee", "triage_changed_at")[:COLUMN_LIMIT]), working.count(),
                     _grouped(working, "assignee")),
        TriageColumn(TriageStatus.RESOLVED, "Resolved in the last 24 h",
                     list(resolved.order_by("-triage_changed_at")[:COLUMN_LIMIT]), resolved.count(),
                     _grouped(resolved, "resolution")),
    ]


def triage_people() -> list[str]:
    """Whom a session can be assigned to or filtered by: active users (dashboard, admin, API-token users) and
    anyone who holds a session now (in proxy mode the proxy's identities are stored nowhere else)."""
    user_model = get_user_model()
    users = user_model.objects.filter(is_active=True).values_list(user_model.USERNAME_FIELD, flat=True)
    holders = AlertSession.objects.exclude(assignee="").order_by().values_list("assignee", flat=True).distinct()
    return sorted(set(users) | set(holders), key=str.lower)
