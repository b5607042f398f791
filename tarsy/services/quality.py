"""Session quality: requesting and storing automatic scores, saving reviews, and the reads scoring needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.mcp.masking.boundary import mask_text
from tarsy.config import get_config
from tarsy.decisions import ScoreSession, enact_on_commit
from tarsy.errors import Conflict, ValidationFailed
from tarsy.models import (
    TERMINAL_SESSION_STATUSES,
    AlertSession,
    LLMInteraction,
    MCPInteraction,
    Rating,
    ScoreStatus,
    SessionReview,
    SessionScore,
    SessionStatus,
    StageKind,
    TimelineEvent,
)
from tarsy.streaming.publisher import SESSIONS_CHANNEL, session_channel

from . import memories, triage
from .events import publish
from .sessions import session_get

EVIDENCE_TYPES = ("tool_result", "mcp_tool_summary")
QUALITY_EVENT = "session.quality"  # a score or review changed: pages showing the session refresh it


def _publish_quality(session_id: Any) -> None:
    """Tell the session's page and the sessions list; the rows are the truth, the event only says to re-read."""
    score = SessionScore.objects.filter(session_id=session_id).values("status", "score", "support", "tags").first()
    review = SessionReview.objects.filter(session_id=session_id).values("rating", "author").first()
    publish(QUALITY_EVENT, {"session_id": str(session_id), "score": score, "review": review},
            session_id=session_id, channels=[session_channel(session_id), SESSIONS_CHANNEL])
MAX_FEEDBACK_CHARS = 10_000


def scoring_enabled() -> bool:
    return get_config().scoring.enabled


def score_request(*, session_id: Any) -> SessionScore:
    """Queue a (re-)score of a completed session; the previous score stays visible until the new one lands."""
    session = session_get(session_id=session_id)
    if not scoring_enabled():
        raise Conflict("automatic scoring is not configured (scoring.llm_provider in tarsy.yaml)")
    if session.status != SessionStatus.COMPLETED:
        raise Conflict(f"session is {session.status}: only completed sessions are scored", {"status": session.status})
    return _score_queue(session.id)


def score_on_completion(*, session_id: Any) -> None:
    """A session just completed: score it when scoring is configured; without scoring, memory reflects on the
    completed session at once (with it, after the score)."""
    session = AlertSession.all_objects.filter(id=session_id, status=SessionStatus.COMPLETED).first()
    if session is None:
        return
    if scoring_enabled():
        _score_queue(session_id)
    else:
        with transaction.atomic():
            memories.reflection_request(session=session, trigger="completion")


def _score_queue(session_id: Any) -> SessionScore:
    with transaction.atomic():
        score, _ = SessionScore.objects.update_or_create(
            session_id=session_id,
            defaults={"status": ScoreStatus.PENDING, "error": "", "requested_at": timezone.now()})
        enact_on_commit([ScoreSession(str(session_id))])
        _publish_quality(session_id)
    return score


def score_claim(*, session_id: Any) -> bool:
    """True when a score is waiting for this task (status pending): a redelivered task that already scored stops."""
    return SessionScore.objects.filter(session_id=session_id, status=ScoreStatus.PENDING).exists()


@transaction.atomic
def score_store(*, session_id: Any, score: int, support: str, scorer_score: int, rationale: str, tags: list[str],
                signals: dict[str, Any], provider: str, model: str) -> None:
    SessionScore.objects.filter(session_id=session_id).update(
        status=ScoreStatus.SCORED, score=score, support=support, scorer_score=scorer_score, rationale=rationale,
        tags=tags, signals=signals, provider=provider, model=model, error="", scored_at=timezone.now(), failed_at=None)
    _publish_quality(session_id)
    triage.triage_on_score(session_id=session_id, score=score)  # the chain may dismiss a calm, well-scored session
    session = AlertSession.all_objects.filter(id=session_id).first()
    if session is not None:
        memories.reflection_request(session=session, trigger="score")


@transaction.atomic
def score_fail(*, session_id: Any, error: str, signals: dict[str, Any], provider: str, model: str) -> None:
    """The scorer failed: the error and its time are kept with the score; the session itself is untouched. An
    earlier score stays as it was, with its own time, provider and signals: a failed re-score must not look like
    a fresh score."""
    rows = SessionScore.objects.filter(session_id=session_id)
    rows.update(status=ScoreStatus.FAILED, error=error[:4000], failed_at=timezone.now())
    rows.filter(score__isnull=True).update(signals=signals, provider=provider, model=model)
    _publish_quality(session_id)


def review_save(*, session_id: Any, rating: str, feedback: str = "", action_taken: str = "",
                author: str) -> SessionReview:
    """Record (or replace) the engineer's verdict on a finished session's analysis."""
    session = session_get(session_id=session_id)
    if session.status not in TERMINAL_SESSION_STATUSES:
        raise Conflict(f"session is {session.status}: review it once it has finished", {"status": session.status})
    if rating not in Rating.values:
        raise ValidationFailed(f"unknown rating {rating!r}", {"rating": [f"One of: {', '.join(Rating.values)}."]})
    for name, text in (("feedback", feedback), ("action_taken", action_taken)):
        if len(text) > MAX_FEEDBACK_CHARS:
            raise ValidationFailed(f"{name} is too long", {name: [f"At most {MAX_FEEDBACK_CHARS} characters."]})
    with transaction.atomic():
        previous = SessionReview.objects.filter(session_id=session.id).values_list("rating", flat=True).first()
        review, _ = SessionReview.objects.update_or_create(
            session_id=session.id,
            defaults={"rating": rating, "feedback": mask_text(feedback.strip()),
                      "action_taken": mask_text(action_taken.strip()),
                      "author": author[:255]})
        memories.memory_review_adjust(session_id=session.id, rating=rating, previous=previous, reviewer=author)
        memories.reflection_request(session=session, trigger="review")
        _publish_quality(session.id)
    return review


@dataclass
class Evidence:
    """What a scorer reads besides the analysis: tool results (with their evidence ids) and the run's counts."""

    results: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: int = 0
    failed_tool_calls: int = 0
    budget_exhausted: bool = False
    agents: list[str] = field(default_factory=list)


def session_evidence(*, session_id: Any) -> Evidence:
    """The investigation's tool evidence (chat stages excluded: they came after the analysis; so are superseded
    attempts' calls: the run went on without them)."""
    events = (TimelineEvent.objects.filter(session_id=session_id, event_type__in=EVIDENCE_TYPES)
              .exclude(stage__kind=StageKind.CHAT).order_by("created_at", "id"))
    calls = MCPInteraction.objects.filter(session_id=session_id, superseded=False).exclude(
        execution__stage__kind=StageKind.CHAT)
    forced = LLMInteraction.objects.filter(session_id=session_id, interaction_type="forced_conclusion",
                                           superseded=False).exclude(execution__stage__kind=StageKind.CHAT)
    return Evidence(
        results=[{"evidence_id": (e.metadata or {}).get("evidence_id") or "",
                  "tool": ".".join(filter(None, [(e.metadata or {}).get("server_name"),
                                                 (e.metadata or {}).get("tool_name")])),
                  "is_error": bool((e.metadata or {}).get("is_error")), "content": e.content} for e in events],
        tool_calls=calls.count(), failed_tool_calls=calls.filter(success=False).count(),
        budget_exhausted=forced.exists(),
        agents=sorted(set(TimelineEvent.objects.filter(session_id=session_id, execution__isnull=False)
                          .exclude(stage__kind=StageKind.CHAT).values_list("execution__agent_name", flat=True))),
    )
