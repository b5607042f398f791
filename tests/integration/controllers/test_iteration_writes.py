"""An iteration's writes: the claim under its lease, timeline rows whose events report them as stored, and event
ids in the order of publication."""

from __future__ import annotations

import pytest
from django.db import transaction

from agents.llm.types import ConversationMessage, ToolCall
from tarsy.models import AgentExecution, Event, Message, TimelineEvent
from tarsy.pipeline.iteration import iteration_begin
from tarsy.services import messages, timeline
from tarsy.services.events import batched_events, publish
from tarsy.streaming.publisher import session_channel

from .conftest import only_execution, react_action, run_next, start_session

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

PODS = react_action("Check the pods first.", "k8s.get_pods", '{"namespace": "prod"}')
ANSWER = "Thought: enough.\nFinal Answer: web-1 lacks its config map."


def test_the_next_iteration_is_claimed_under_a_lease_with_what_the_recorder_needs(configure):
    configure({"SreAgent": [PODS, ANSWER]})
    execution = only_execution(start_session())
    run_next(execution.id)

    claim = iteration_begin(execution.id, 2)

    assert claim is not None
    claimed = claim.execution
    assert (claimed.current_iteration, claimed.status, claimed.iterations_completed) == (2, "active", 1)
    assert claimed.lease_expires_at > claimed.last_heartbeat_at
    stored = AgentExecution.objects.get(id=execution.id)
    assert (stored.current_iteration, stored.lease_expires_at) == (2, claimed.lease_expires_at)
    assert claimed.session.related_count == 0 and claimed.last_event_sequence > 0
    assert (claimed.stage.id, claimed.session.id) == (execution.stage_id, execution.session_id)


def test_a_held_or_finished_iteration_is_not_claimed_again(configure):
    configure({"SreAgent": [PODS, ANSWER]})
    execution = only_execution(start_session())
    run_next(execution.id)
    assert iteration_begin(execution.id, 2) is not None

    assert iteration_begin(execution.id, 2) is None  # a duplicate task: the lease holds it
    assert iteration_begin(execution.id, 1) is None  # done already
    assert iteration_begin(execution.id, 3) is None  # out of order
    AgentExecution.objects.filter(id=execution.id).update(status="cancelled")
    assert iteration_begin(execution.id, 2) is None


def test_a_stopped_session_ends_the_execution_instead_of_claiming(configure):
    configure({"SreAgent": [PODS, ANSWER]})
    session = start_session()
    execution = only_execution(session)
    run_next(execution.id)
    type(session).all_objects.filter(id=session.id).update(status="cancelling")

    assert iteration_begin(execution.id, 2) is None

    execution.refresh_from_db()
    assert (execution.status, execution.current_iteration) == ("cancelled", 1)


def test_a_timeline_rows_events_report_the_row_as_stored(configure):
    configure({"SreAgent": [ANSWER]})
    session = start_session()

    with transaction.atomic():
        event = timeline.timeline_event_create(session_id=session.id, event_type="llm_thinking", content="a",
                                               status="streaming", sequence_number=90)  # as the recorder knows it
    with transaction.atomic():
        timeline.timeline_event_finish(event, content="ab", status="completed")

    stored = TimelineEvent.objects.get(id=event.id)
    assert (stored.content, stored.status, stored.updated_at) == ("ab", "completed", event.updated_at)
    created, completed = Event.objects.filter(channel=session_channel(session.id),
                                              type__startswith="timeline_event.").order_by("id")
    assert (created.type, completed.type) == ("timeline_event.created", "timeline_event.completed")
    assert created.payload == {"session_id": str(session.id), "timeline_event": {
        **completed.payload["timeline_event"], "content": "a", "status": "streaming",
        "updated_at": created.payload["timeline_event"]["updated_at"]}}
    assert completed.payload["timeline_event"] == timeline.timeline_event_payload(stored)["timeline_event"]


def test_event_ids_follow_the_order_of_publication_in_a_batch(configure):
    configure({"SreAgent": [ANSWER]})
    session = start_session()

    with transaction.atomic(), batched_events():
        [notice] = publish("system.notice", {"n": 1}, session_id=session.id)
        created = timeline.timeline_event_create(session_id=session.id, event_type="error", content="x")
        [later] = publish("system.notice", {"n": 2}, session_id=session.id)

    rows = list(Event.objects.filter(channel=session_channel(session.id), id__gte=notice.id).order_by("id"))
    assert [(r.type, r.payload.get("n")) for r in rows] == [
        ("system.notice", 1), ("timeline_event.created", None), ("system.notice", 2)]
    assert rows[1].payload["timeline_event"]["id"] == created.id and later.id == rows[2].id


def _reply_events(session_id, execution_id) -> list[tuple[str, str]]:
    """The catch-up events of the execution's reply event (its first timeline row): type and reported status."""
    first = TimelineEvent.objects.filter(execution_id=execution_id).order_by("sequence_number").first()
    return [(e.type, e.payload["timeline_event"]["status"])
            for e in Event.objects.filter(channel=session_channel(session_id), type__startswith="timeline_event.")
            .order_by("id") if e.payload["timeline_event"]["id"] == first.id]


def test_a_streaming_reply_shows_while_it_streams(configure):
    """Chunks spread over a second: the reply's event is stored and announced with its first chunks, then
    completed — a page opened mid-reply shows it."""
    configure({"SreAgent": [ANSWER]}, agents={"SreAgent": {"mcp_servers": []}}, latency_ms=1000, chunk_size=4)
    session = start_session()
    execution = only_execution(session)
    run_next(execution.id)

    assert _reply_events(session.id, execution.id) == [("timeline_event.created", "streaming"),
                                         ("timeline_event.completed", "completed")]


def test_a_reply_that_arrives_whole_is_stored_complete_with_the_iteration(configure):
    """Nothing to stream: the event is written once, complete, with the iteration's last batch."""
    configure({"SreAgent": [ANSWER]}, agents={"SreAgent": {"mcp_servers": []}})
    session = start_session()
    execution = only_execution(session)
    run_next(execution.id)

    assert _reply_events(session.id, execution.id) == [("timeline_event.created", "completed")]


def test_the_claim_reads_the_conversation_as_stored(configure):
    """The claim's one SELECT brings the conversation: the same messages, JSON fields and all, as a read of its own."""
    configure({"SreAgent": [PODS, ANSWER]})
    session = start_session()
    execution = only_execution(session)
    run_next(execution.id)
    call = ToolCall(id="c-1", name="k8s.get_pods", arguments={"namespace": "prod", "labels": ["a", 2]})
    Message.objects.bulk_create(messages.message_rows(
        session_id=session.id, execution_id=execution.id, iteration=1, start=90, messages=[
            ConversationMessage(role="assistant", content="", tool_calls=[call], provider_state={"sig": "x=="}),
            ConversationMessage(role="tool", content='{"pods": []}', tool_call_id="c-1", tool_name="k8s.get_pods"),
        ]))

    claimed = iteration_begin(execution.id, 2)

    assert claimed.conversation == messages.messages_with_next_sequence(execution_id=execution.id)
    conversation, next_sequence = claimed.conversation
    assert next_sequence == 92 and conversation[-2].tool_calls == [call]
    assert conversation[-2].provider_state == {"sig": "x=="} and conversation[-1].tool_name == "k8s.get_pods"
