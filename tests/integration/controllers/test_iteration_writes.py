"""An iteration's writes: the claim under its lease, timeline rows whose events report them as stored, and event
ids in the order of publication."""

from __future__ import annotations

import pytest
from django.db import transaction

from tarsy.models import AgentExecution, Event, TimelineEvent
from tarsy.pipeline.iteration import iteration_begin
from tarsy.services import timeline
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

    claimed = iteration_begin(execution.id, 2)

    assert claimed is not None
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
