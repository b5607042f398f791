"""Timeline events: what the user sees, streamed progressively and published after commit."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from agents.timeline_events import event_metadata
from tarsy.models import TimelineEvent, TimelineStatus
from tarsy.streaming.publisher import publish_transient

from .events import publish


def timeline_event_payload(event: TimelineEvent) -> dict[str, Any]:
    return {
        "session_id": str(event.session_id),
        "timeline_event": {
            "id": event.id,
            "session_id": str(event.session_id),
            "stage_id": event.stage_id,
            "execution_id": str(event.execution_id) if event.execution_id else None,
            "iteration": event.iteration,
            "sequence_number": event.sequence_number,
            "event_type": event.event_type,
            "status": event.status,
            "content": event.content,
            "metadata": event.metadata,
            "created_at": event.created_at.isoformat(),
            "updated_at": event.updated_at.isoformat(),
        },
    }


def next_sequence(*, session_id: Any, execution_id: Any) -> int:
    if execution_id is not None:
        qs = TimelineEvent.objects.filter(execution_id=execution_id)
    else:
        qs = TimelineEvent.objects.filter(session_id=session_id, execution__isnull=True)
    return (qs.aggregate(m=Max("sequence_number"))["m"] or 0) + 1


@transaction.atomic(savepoint=False)  # callers batch several writes in one transaction
def timeline_event_create(
    *,
    session_id: Any,
    event_type: str,
    content: str = "",
    metadata: dict[str, Any] | None = None,
    status: str = TimelineStatus.COMPLETED,
    stage_id: int | None = None,
    execution_id: Any = None,
    iteration: int = 0,
    sequence_number: int | None = None,
) -> TimelineEvent:
    """`sequence_number`: the caller's known next number (the one writer of an execution's timeline during
    its iteration); looked up when not given. The unique constraint still guards it."""
    event = timeline_event_row(
        session_id=session_id, stage_id=stage_id, execution_id=execution_id, iteration=iteration,
        sequence_number=sequence_number or next_sequence(session_id=session_id, execution_id=execution_id),
        event_type=event_type, status=status, content=content, metadata=metadata,
    )
    _save_and_publish(event, "timeline_event.created")
    return event


def timeline_event_row(*, session_id: Any, stage_id: int | None, execution_id: Any, iteration: int,
                       sequence_number: int, event_type: str, status: str, content: str,
                       metadata: dict[str, Any] | None) -> TimelineEvent:
    """An unsaved event, for a writer that stores several in one INSERT (then `timeline_event_created`)."""
    return TimelineEvent(
        session_id=session_id, stage_id=stage_id, execution_id=execution_id, iteration=iteration,
        sequence_number=sequence_number, event_type=event_type, status=status, content=content,
        metadata=event_metadata(event_type, **(metadata or {})),
    )


def timeline_event_created(event: TimelineEvent) -> None:
    """Publish an event stored by a bulk INSERT (a `timeline_event_row`), from the stored row."""
    publish("timeline_event.created", timeline_event_payload(event), session_id=event.session_id)


@transaction.atomic(savepoint=False)
def timeline_event_complete(
    *, event_id: int, content: str, status: str = TimelineStatus.COMPLETED, metadata: dict[str, Any] | None = None,
    event_type: str | None = None,
) -> TimelineEvent:
    event = TimelineEvent.objects.select_for_update().get(id=event_id)
    return timeline_event_finish(event, content=content, status=status, metadata=metadata, event_type=event_type)


@transaction.atomic(savepoint=False)
def timeline_event_finish(
    event: TimelineEvent, *, content: str, status: str = TimelineStatus.COMPLETED,
    metadata: dict[str, Any] | None = None, event_type: str | None = None,
) -> TimelineEvent:
    """Complete an event its one writer holds in memory (no read back: only progress saves touched the row,
    and this overwrites their content)."""
    timeline_event_settle(event, content=content, status=status, metadata=metadata, event_type=event_type)
    _save_and_publish(event, "timeline_event.completed", update_fields=_FINISH_FIELDS)
    return event


def timeline_event_settle(event: TimelineEvent, *, content: str, status: str, metadata: dict[str, Any] | None,
                          event_type: str | None) -> None:
    """A finished event's content, status, type and metadata, set on the row in memory (saved by the caller)."""
    event.content = content
    event.status = status
    event.event_type = event_type or event.event_type
    if metadata or event_type:
        event.metadata = event_metadata(event.event_type, **{**event.metadata, **(metadata or {})})


_FINISH_FIELDS = ("content", "status", "event_type", "metadata", "updated_at")


def _save_and_publish(event: TimelineEvent, event_type: str, update_fields: tuple[str, ...] = ()) -> None:
    """Write the row (insert, or update `update_fields`), then store the event that reports the stored row."""
    if update_fields:
        event.save(update_fields=list(update_fields))
    else:
        event.save(force_insert=True)
    publish(event_type, timeline_event_payload(event), session_id=event.session_id)


def timeline_event_save_progress(*, event_id: int, content: str) -> None:
    """Persist streamed content so a reload mid-stream shows it (no event: chunks already went out)."""
    TimelineEvent.objects.filter(id=event_id, status=TimelineStatus.STREAMING).update(content=content)


def timeline_event_stream_chunk(*, session_id: Any, event_id: int, delta: str, kind: str) -> None:
    publish_transient(
        "stream.chunk",
        {"session_id": str(session_id), "timeline_event_id": event_id, "delta": delta, "kind": kind},
        session_id=session_id,
    )


@transaction.atomic
def timeline_events_discard_iteration(*, execution_id: Any, iteration: int) -> int:
    """Remove what an interrupted attempt of this iteration wrote; browsers are told the rows failed."""
    events = list(TimelineEvent.objects.select_for_update().filter(execution_id=execution_id, iteration=iteration))
    for event in events:
        event.status = TimelineStatus.FAILED
        payload = timeline_event_payload(event)
        payload["timeline_event"]["metadata"] = {**event.metadata, "superseded": True}
        publish("timeline_event.completed", payload, session_id=event.session_id)
    TimelineEvent.objects.filter(id__in=[e.id for e in events]).delete()
    return len(events)


# Event types a later reader (synthesis, chat) needs; summaries of the session itself are left out.
INVESTIGATION_EVENT_TYPES = (
    "llm_thinking", "llm_response", "llm_tool_call", "mcp_tool_call", "tool_result", "mcp_tool_summary",
    "final_analysis", "error", "code_execution", "google_search_result", "url_context_result", "related_alerts",
)


def timeline_investigation_events(*, execution_id: Any) -> list[dict[str, Any]]:
    """What an execution did, for a later reader: its events' type, content and metadata, in stored order."""
    events = TimelineEvent.objects.filter(execution_id=execution_id, event_type__in=INVESTIGATION_EVENT_TYPES)
    return [{"event_type": e.event_type, "content": e.content, "metadata": e.metadata} for e in events]


def related_alerts_seen(*, execution_id: Any) -> set[int]:
    """Ids of the related alerts already added to an execution's context (its related_alerts events say which)."""
    seen: set[int] = set()
    for metadata in TimelineEvent.objects.filter(execution_id=execution_id,
                                                 event_type="related_alerts").values_list("metadata", flat=True):
        seen.update(i for i in (metadata or {}).get("occurrence_ids", []) if isinstance(i, int))
    return seen
