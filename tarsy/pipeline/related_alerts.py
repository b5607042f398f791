"""Alerts of the session's group that arrived since the execution last looked: read fresh at every iteration.

The first prompt carries them after the alert; later they join the conversation as a message of their own
before the step's LLM call (a chat answers about the investigation, not the storm). Either way a timeline event
says so, and its metadata is the record of what the execution has seen: a discarded attempt forgets it too.
"""

from __future__ import annotations

from agents.llm.types import ConversationMessage
from agents.prompts.stage_context import format_related_alerts
from agents.timeline_events import TimelineEventType, event_metadata
from tarsy.models import AgentExecution, StageKind
from tarsy.services import occurrences, timeline
from tarsy.services.recorder import DbRecorder


def related_alerts(execution: AgentExecution, recorder: DbRecorder, first_prompt: bool) -> str:
    """The text the first prompt appends to the alert ("" later, or when nothing is new). `execution` comes from
    the claim (services.executions.execution_lock_for_iteration) with its session, whose `related_count` says
    whether it has related alerts at all: most have none, and their steps do not look."""
    if execution.stage.kind == StageKind.CHAT or not execution.session.related_count:
        return ""
    fresh = occurrences.related_after(session_id=execution.session_id,
                                      delivered=timeline.related_alerts_seen(execution_id=execution.id))
    if not fresh:
        return ""
    text, flagged = format_related_alerts([(row.alert_type, row.received_at.isoformat(), row.alert_data)
                                           for row in fresh])
    ids = [row.id for row in fresh]
    recorder.add_event(TimelineEventType.RELATED_ALERTS, text,
                       event_metadata(TimelineEventType.RELATED_ALERTS, occurrence_ids=ids, count=len(ids),
                                      suspected_injection=flagged or None))
    if first_prompt:
        return "\n\n" + text
    recorder.add_messages([ConversationMessage(role="user", content=text)])
    return ""
