"""Timeline metadata through the service, the dashboard and the API: one shape written, every stored age read."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client
from pydantic import ValidationError

from tarsy.models import AgentExecution, AlertSession, Stage, TimelineEvent
from tarsy.services import timeline

pytestmark = [pytest.mark.django_db]

OLD_EXECUTOR = {"server": "k8s", "tool": "pods_list", "arguments": {"namespace": "prod"}, "is_error": True,
                "duration_ms": 1500}
OLD_CONTROLLER = {"tool_name": "k8s.pods_list", "server_name": "k8s", "tool": "pods_list",
                  "arguments": {"namespace": "prod"}, "source": "native"}


@pytest.fixture
def execution() -> AgentExecution:
    session = AlertSession.objects.create(alert_data="pod web-1", alert_type="kubernetes", chain_id="kubernetes",
                                          status="in_progress")
    stage = Stage.objects.create(session=session, name="analysis", index=0, status="active")
    return AgentExecution.objects.create(stage=stage, session=session, agent_name="KubernetesAgent",
                                         iteration_strategy="native-thinking", status="active")


def _stored(execution: AgentExecution, event_type: str, metadata: dict, n: int = 1) -> TimelineEvent:
    """A row as older code left it: written straight to the table, past today's checks."""
    return TimelineEvent.objects.create(session=execution.session, stage=execution.stage, execution=execution,
                                        sequence_number=n, event_type=event_type, content="3 pods",
                                        metadata=metadata)


def test_the_service_refuses_a_tool_event_with_the_old_keys(execution):
    with pytest.raises(ValidationError, match="server"), transaction.atomic():
        timeline.timeline_event_create(session_id=execution.session_id, execution_id=execution.id,
                                       event_type="mcp_tool_call", metadata={"server": "k8s", "tool": "pods_list"})
    assert not TimelineEvent.objects.exists()


def test_completing_an_event_checks_the_merged_metadata_against_its_new_type(execution):
    event = timeline.timeline_event_create(session_id=execution.session_id, execution_id=execution.id,
                                           event_type="llm_thinking", metadata={"source": "react"},
                                           status="streaming")
    with pytest.raises(ValidationError, match="needs server_name and tool_name"), transaction.atomic():
        timeline.timeline_event_complete(event_id=event.id, content="{}", event_type="llm_tool_call")
    done = timeline.timeline_event_complete(event_id=event.id, content="{}", event_type="llm_tool_call",
                                            metadata={"server_name": "k8s", "tool_name": "pods_list"})
    assert done.metadata == {"source": "react", "server_name": "k8s", "tool_name": "pods_list"}


@pytest.mark.parametrize("event_type, metadata", [("mcp_tool_call", OLD_EXECUTOR),
                                                  ("llm_tool_call", OLD_CONTROLLER)], ids=["executor", "controller"])
def test_an_old_row_with_the_old_tool_keys_still_renders(execution, event_type, metadata):
    event = _stored(execution, event_type, metadata)
    client = Client(REMOTE_ADDR="127.0.0.1")
    page = client.get(f"/sessions/{execution.session_id}").content.decode()
    fragment = client.get(f"/sessions/{execution.session_id}/events?ids={event.id}").json()["events"][str(event.id)]
    for html in (page, fragment):
        assert '<code class="tool">k8s.pods_list</code>' in html
        assert "&quot;namespace&quot;: &quot;prod&quot;" in html
    if event_type == "mcp_tool_call":
        assert "1.5 s" in fragment and "status-failed" in fragment


def test_the_api_serves_old_rows_in_todays_shape(execution):
    _stored(execution, "mcp_tool_call", OLD_EXECUTOR, n=1)
    _stored(execution, "llm_tool_call", OLD_CONTROLLER, n=2)
    response = Client(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/sessions/{execution.session_id}/timeline")
    assert [e["metadata"] for e in response.json()["events"]] == [
        {"server_name": "k8s", "tool_name": "pods_list", "arguments": {"namespace": "prod"}, "is_error": True,
         "duration_ms": 1500},
        {"server_name": "k8s", "tool_name": "pods_list", "arguments": {"namespace": "prod"}, "source": "native"},
    ]


def test_the_running_panel_names_the_tool_being_called_for_old_and_new_rows(execution):
    _stored(execution, "mcp_tool_call", OLD_EXECUTOR)
    client = Client(REMOTE_ADDR="127.0.0.1")
    assert "Now: calling k8s.pods_list" in client.get("/?fragment=active").content.decode()
    timeline.timeline_event_create(session_id=execution.session_id, execution_id=execution.id,
                                   event_type="mcp_tool_call", status="streaming",
                                   metadata={"server_name": "k8s", "tool_name": "events_list"})
    assert "Now: calling k8s.events_list" in client.get("/?fragment=active").content.decode()


def test_what_a_fallback_provider_answered_is_labelled_on_the_page(execution):
    answered = timeline.timeline_event_create(session_id=execution.session_id, execution_id=execution.id,
                                              event_type="final_analysis", content="The configmap is missing.",
                                              metadata={"fallback_provider": "backup"})
    plain = timeline.timeline_event_create(session_id=execution.session_id, execution_id=execution.id,
                                           event_type="llm_response", content="Checking.", metadata={})
    client = Client(REMOTE_ADDR="127.0.0.1")
    fragments = client.get(f"/sessions/{execution.session_id}/events?ids={answered.id},{plain.id}").json()["events"]

    assert "(fallback provider backup)" in fragments[str(answered.id)]
    assert "fallback provider" not in fragments[str(plain.id)]
