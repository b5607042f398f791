"""Evidence ids and the verification of a session's citations (the rules are in agents.citations).

An evidence id is issued from a counter on the session row, so parallel agents of one session on different
workers never share one. The verification runs once the session's final analysis is written, without any
LLM, and is stored on the session: `session_citations` is what the API, the dashboard and scoring read.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from agents.citations import Evidence, evidence_id, verify_citations
from agents.timeline_events import TimelineEventType, ToolResultMetadata, read_metadata
from tarsy.models import AlertSession, StageKind, TimelineEvent
from tarsy.services.counters import session_counter_raise


def evidence_id_issue(*, session_id: Any) -> str:
    """The session's next evidence id (E1, E2, …): one statement, its own transaction or the caller's."""
    return evidence_id(session_counter_raise(session_id=session_id, counter="evidence_count"))


def session_evidence(*, session_id: Any) -> list[Evidence]:
    """The investigation's tool results that carry an evidence id, in timeline order (chat stages excluded:
    they come after the analysis)."""
    events = (TimelineEvent.objects.filter(session_id=session_id, event_type=TimelineEventType.TOOL_RESULT)
              .exclude(stage__kind=StageKind.CHAT).only("id", "event_type", "metadata"))
    evidence = []
    for event in events:
        meta = read_metadata(event.event_type, event.metadata)
        if isinstance(meta, ToolResultMetadata) and meta.evidence_id:
            evidence.append(Evidence(id=meta.evidence_id, event_id=event.id, tool=meta.qualified_name,
                                     is_error=bool(meta.is_error)))
    return evidence


def memories_recalled(*, session_id: Any) -> set[str]:
    """The memory ids ("M<n>") the session's investigation prompts carried (its memory.recalled events)."""
    recalled: set[str] = set()
    events = (TimelineEvent.objects.filter(session_id=session_id, event_type=TimelineEventType.MEMORY_RECALLED)
              .exclude(stage__kind=StageKind.CHAT).values_list("metadata", flat=True))
    for metadata in events:
        recalled.update(f"M{i}" for i in (metadata or {}).get("memory_ids", []) if isinstance(i, int))
    return recalled


def citations_verify(*, session_id: Any) -> dict[str, Any]:
    """Check the session's final analysis's citations and store the result on the session."""
    session = AlertSession.all_objects.only("id", "final_analysis", "alert_data").get(id=session_id)
    result = verify_citations(session.final_analysis, session_evidence(session_id=session_id), session.alert_data,
                              memories_recalled(session_id=session_id))
    result["verified_at"] = timezone.now().isoformat()
    AlertSession.all_objects.filter(id=session_id).update(citations=result)
    return result


def session_citations(*, session_id: Any) -> dict[str, Any] | None:
    """The stored verification (None before the final analysis was written), for the API, pages and scoring."""
    return AlertSession.all_objects.filter(id=session_id).values_list("citations", flat=True).first()
