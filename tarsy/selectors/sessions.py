"""Session reads shared by the API and the dashboard: the history list, the active and queued sessions, filter
options, a session with its stages, timeline, debug records, summary and chat."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Prefetch, Q, QuerySet

from tarsy.errors import NotFound
from tarsy.models import (
    ACTIVE_SESSION_STATUSES,
    FAILURE_TAGS,
    SUPPORT_BANDS,
    TERMINAL_EXEC_STATUSES,
    AlertOccurrence,
    AlertSession,
    ChatUserMessage,
    LLMInteraction,
    MCPInteraction,
    OccurrenceKind,
    Rating,
    SessionStatus,
    Stage,
    StageKind,
    TimelineEvent,
)

from .conversations import llm_conversations
from .filters import ORDERING_FIELDS, REVIEW_STATES, SCORE_STATES, with_duration
from .queue import in_queue_order, queue_position

RECENT_OCCURRENCES = 20  # repeats shown with a session: a storm of thousands must not make its page megabytes


def sessions_list() -> QuerySet:
    """Every (not deleted) session, newest first, with its duration; what `SessionFilter` narrows and orders."""
    rows = AlertSession.objects.defer("alert_data").select_related("counters", "score", "review")
    return with_duration(rows).order_by("-created_at")


def sessions_active() -> dict[str, list[AlertSession]]:
    """Running sessions (oldest first) and the queue in the order dispatch claims it; queue positions are 1-based
    (`queue_position`)."""
    rows = with_duration(AlertSession.objects.defer("alert_data").select_related("counters", "score", "review"))
    active = list(rows.filter(status__in=ACTIVE_SESSION_STATUSES).order_by("started_at"))
    queued = list(in_queue_order(rows))
    for position, session in enumerate(queued, start=1):
        session.queue_position = position
    return {"active": active, "queued": queued}


def session_filter_options() -> dict[str, list[str]]:
    """The values each history filter can take: those in use plus the configured alert types and chains."""
    from tarsy.config import get_config

    config = get_config()
    rows = AlertSession.objects.order_by()

    def used(column: str) -> set[str]:
        return set(filter(None, rows.values_list(column, flat=True).distinct()))

    return {
        "statuses": [s.value for s in SessionStatus],
        "alert_types": sorted(used("alert_type") | set(config.alert_types())),
        "chain_ids": sorted(used("chain_id") | set(config.chains)),
        "authors": sorted(used("author")),
        "ordering": [*ORDERING_FIELDS, *(f"-{f}" for f in ORDERING_FIELDS)],
        "supports": list(SUPPORT_BANDS),
        "scoring_states": list(SCORE_STATES),
        "tags": list(FAILURE_TAGS),
        "review_states": list(REVIEW_STATES),
        "ratings": [r.value for r in Rating],
    }


def session_detail(*, session_id: Any) -> AlertSession:
    """A session as its detail shows it, read in the same few queries however many stages, executions and alerts
    it has: its score and review joined; its stages with their executions, the alerts of the group it leads
    (`related_alerts`, oldest first) and its latest repeats (`recent_occurrences`, newest first) prefetched; its
    place in the queue (`queue_position`, None unless pending). NotFound when there is none."""
    occurrences = AlertOccurrence.objects.order_by("id")
    try:
        session = (AlertSession.objects.select_related("counters", "score", "review").prefetch_related(
            "stages__executions",
            Prefetch("occurrences", occurrences.filter(kind=OccurrenceKind.RELATED), to_attr="related_alerts"),
            Prefetch("occurrences", occurrences.filter(kind=OccurrenceKind.OCCURRENCE).reverse()[:RECENT_OCCURRENCES],
                     to_attr="recent_occurrences"),
        ).get(id=session_id))
    except (AlertSession.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound(f"session {session_id} not found") from exc
    session.queue_position = queue_position(session)  # type: ignore[attr-defined]  # as sessions_active sets it
    return session


def session_occurrences(*, session_id: Any, kind: str, limit: int | None = None) -> list[AlertOccurrence]:
    """The alerts of `kind` that joined the session: all of them oldest first, or the latest `limit` newest
    first."""
    rows = AlertOccurrence.objects.filter(session_id=session_id, kind=kind)
    return list(rows.order_by("-id")[:limit] if limit else rows.order_by("id"))


def timeline_events(session: AlertSession) -> list[TimelineEvent]:
    return list(TimelineEvent.objects.filter(session=session).order_by("created_at", "id"))


def interactions(session: AlertSession) -> dict[str, list[Any]]:
    return {
        "llm_interactions": llm_conversations(list(LLMInteraction.objects.filter(session=session)
                                                   .select_related("execution").order_by("created_at", "id"))),
        "mcp_interactions": list(MCPInteraction.objects.filter(session=session).select_related("execution")
                                 .order_by("created_at", "id")),
    }


def session_summary(session: AlertSession) -> dict[str, Any]:
    llm = LLMInteraction.objects.filter(session=session).aggregate(
        n=Count("id"), failed=Count("id", filter=Q(success=False)))
    mcp = MCPInteraction.objects.filter(session=session).aggregate(
        n=Count("id"), failed=Count("id", filter=Q(success=False)))
    timeline = TimelineEvent.objects.filter(session=session).aggregate(
        n=Count("id"), errors=Count("id", filter=Q(event_type="error")))
    return {
        "session_id": session.id,
        "status": session.status,
        "duration_seconds": session.duration_seconds,
        "stages": Stage.objects.filter(session=session).exclude(kind=StageKind.CHAT).count(),
        "executions": session.executions.count(),
        "llm_interactions": llm["n"],
        "failed_llm_interactions": llm["failed"],
        "mcp_interactions": mcp["n"],
        "failed_mcp_interactions": mcp["failed"],
        "timeline_events": timeline["n"],
        "errors": timeline["errors"],
        "chat_messages": ChatUserMessage.objects.filter(chat__session=session).count(),
        "tokens": {f: getattr(session.counters, f) for f in ("input_tokens", "output_tokens", "thinking_tokens",
                                                              "total_tokens", "cached_tokens")},
        "cost_usd": session.counters.cost_usd,
        "unpriced_calls": session.counters.unpriced_calls,
        "budget_reached": session.budget_reached,
    }


def chat_messages(session: AlertSession) -> dict[str, Any]:
    """Questions and their replies in order; a reply is its chat stage's final analysis (or error)."""
    questions = ChatUserMessage.objects.filter(chat__session=session).order_by("created_at")
    stages = {s.chat_message_id: s for s in Stage.objects.filter(session=session, kind=StageKind.CHAT,
                                                                  chat_message__isnull=False)}
    messages: list[dict[str, Any]] = []
    running = False
    for question in questions:
        stage = stages.get(question.id)
        messages.append({"id": str(question.id), "role": "user", "content": question.content,
                         "author": question.author, "status": "submitted", "stage_id": stage.id if stage else None,
                         "created_at": question.created_at})
        if stage is None:
            continue
        done = stage.status in TERMINAL_EXEC_STATUSES
        running = running or not done
        messages.append({"id": f"reply-{stage.id}", "role": "assistant",
                         "content": (stage.final_analysis or stage.error_message) if done else "",
                         "author": "", "status": stage.status, "stage_id": stage.id,
                         "created_at": stage.completed_at})
    return {"session_id": session.id, "reply_running": running, "messages": messages}
