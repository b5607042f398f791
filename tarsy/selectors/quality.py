"""Quality over time: score and review distributions per chain, agent and provider, and how far the automatic
scores agree with the engineers' ratings. Reads the sessions `SessionFilter` selected (period, chain, …)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import QuerySet
from django.http import QueryDict

from tarsy.models import (
    SUPPORT_BANDS,
    AgentExecution,
    Rating,
    ScoreStatus,
    SessionReview,
    SessionStatus,
    StageKind,
)

from .filters import SessionFilter
from .sessions import sessions_list


def related_or_none(session, name: str) -> Any:
    """A session's score, review or counters row, None when it has none (reverse one-to-one raises instead)."""
    try:
        return getattr(session, name)
    except ObjectDoesNotExist:
        return None

DEFAULT_PERIOD = "30d"  # the overview's window when the query names none
PERIOD_PARAMS = ("created_within", "start_date", "end_date")

# A rating agrees with a score when the score's band is the one the rating stands for.
RATING_BAND = {Rating.ACCURATE: "supported", Rating.PARTIALLY_ACCURATE: "partly", Rating.INACCURATE: "unsupported"}
HISTOGRAM_BINS = 10


@dataclass
class _Group:
    name: str
    sessions: int = 0
    scores: list[int] = field(default_factory=list)
    bands: Counter = field(default_factory=Counter)
    reviews: Counter = field(default_factory=Counter)
    tags: Counter = field(default_factory=Counter)

    def add(self, row: dict[str, Any]) -> None:
        self.sessions += 1
        if row["score"] is not None:
            self.scores.append(row["score"])
            self.bands[row["support"]] += 1
            self.tags.update(row["tags"])
        if row["rating"]:
            self.reviews[row["rating"]] += 1

    def as_dict(self) -> dict[str, Any]:
        histogram = [0] * HISTOGRAM_BINS
        for score in self.scores:
            histogram[min(score // (100 // HISTOGRAM_BINS), HISTOGRAM_BINS - 1)] += 1
        return {"name": self.name, "sessions": self.sessions, "scored": len(self.scores),
                "mean_score": round(sum(self.scores) / len(self.scores), 1) if self.scores else None,
                "bands": {band: self.bands.get(band, 0) for band in SUPPORT_BANDS},
                "histogram": histogram,
                "reviews": {rating: self.reviews.get(rating, 0) for rating in Rating.values},
                "tags": dict(self.tags.most_common())}


def overview_filter(query: QueryDict) -> SessionFilter:
    """The overview's sessions: the history filter, over the last 30 days unless the query names a period."""
    data = query.copy()
    if not any(data.get(name) for name in PERIOD_PARAMS):
        data["created_within"] = DEFAULT_PERIOD
    return SessionFilter(data, queryset=sessions_list())


def reviews_with_rating(rating: str) -> list[SessionReview]:
    """Reviews of (not deleted) sessions with this rating, oldest first: eval candidates for export_scenario."""
    return list(SessionReview.objects.filter(rating=rating, session__deleted_at__isnull=True)
                .select_related("session").order_by("created_at"))


def _rows(sessions: QuerySet) -> list[dict[str, Any]]:
    rows = sessions.order_by().values("id", "chain_id", "status", "created_at", "score__status", "score__score",
                                      "score__support", "score__tags", "review__rating")
    return [{"id": r["id"], "chain": r["chain_id"], "status": r["status"], "day": r["created_at"].date().isoformat(),
             "score_status": r["score__status"],
             "score": r["score__score"] if r["score__status"] == ScoreStatus.SCORED else None,
             "support": r["score__support"], "tags": r["score__tags"] or [], "rating": r["review__rating"] or ""}
            for r in rows]


def _participants(sessions: QuerySet) -> dict[Any, tuple[set[str], set[str]]]:
    """session → (agents, providers) that worked on its investigation (chat stages came after the analysis).
    One query with the sessions as a subquery: a month of ids would not fit a parameter list."""
    out: dict[Any, tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
    executions = (AgentExecution.objects.filter(session_id__in=sessions.order_by().values("id"))
                  .exclude(stage__kind=StageKind.CHAT)
                  .values_list("session_id", "agent_config_name", "agent_name", "llm_provider"))
    for session_id, config_name, agent_name, provider in executions:
        out[session_id][0].add(config_name or agent_name)
        if provider:
            out[session_id][1].add(provider)
    return out


def _agreement(rows: list[dict[str, Any]]) -> dict[str, Any]:
    pairs = [r for r in rows if r["score"] is not None and r["rating"]]
    matrix = {band: dict.fromkeys(Rating.values, 0) for band in SUPPORT_BANDS}
    by_rating: dict[str, list[int]] = defaultdict(list)
    for row in pairs:
        matrix[row["support"]][row["rating"]] += 1
        by_rating[row["rating"]].append(row["score"])
    agreeing = sum(1 for r in pairs if RATING_BAND[r["rating"]] == r["support"])
    return {"pairs": len(pairs), "agreeing": agreeing, "rate": round(agreeing / len(pairs), 3) if pairs else None,
            "matrix": matrix,
            "mean_score_by_rating": {rating: round(sum(v) / len(v), 1) if (v := by_rating.get(rating)) else None
                                     for rating in Rating.values}}


def quality_overview(sessions: QuerySet) -> dict[str, Any]:
    """Distributions over the given sessions (finished ones: a running session has nothing to judge yet)."""
    rows = [r for r in _rows(sessions) if r["status"] not in (SessionStatus.PENDING, SessionStatus.IN_PROGRESS,
                                                                SessionStatus.CANCELLING)]
    participants = _participants(sessions)
    overall = _Group("all")
    chains: dict[str, _Group] = {}
    agents: dict[str, _Group] = {}
    providers: dict[str, _Group] = {}
    for row in rows:
        overall.add(row)
        chains.setdefault(row["chain"], _Group(row["chain"])).add(row)
        agent_names, provider_names = participants.get(row["id"], (set(), set()))
        for name in agent_names:
            agents.setdefault(name, _Group(name)).add(row)
        for name in provider_names:
            providers.setdefault(name, _Group(name)).add(row)

    def ordered(groups: dict[str, _Group]) -> list[dict[str, Any]]:
        return [g.as_dict() for g in sorted(groups.values(), key=lambda g: (-g.sessions, g.name))]

    days: dict[str, _Group] = {}
    for row in rows:
        days.setdefault(row["day"], _Group(row["day"])).add(row)
    summary = overall.as_dict()
    return {
        "sessions": len(rows), "scored": summary["scored"], "mean_score": summary["mean_score"],
        "reviewed": sum(1 for r in rows if r["rating"]),
        "needs_review": sum(1 for r in rows if not r["rating"] and r["status"] == SessionStatus.COMPLETED),
        "scoring_failed": sum(1 for r in rows if r["score_status"] == ScoreStatus.FAILED),
        "overall": summary, "by_chain": ordered(chains), "by_agent": ordered(agents),
        "by_provider": ordered(providers), "agreement": _agreement(rows),
        "by_day": [days[day].as_dict() for day in sorted(days)],
    }
