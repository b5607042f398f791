"""Evidence citations through the real pipeline: real Celery workers, the real stdio MCP test server, the
scripted provider. The model is shown an id with every tool result; the analysis's citations are checked
against the session's own tool results and alert when it is written, and the API shows the outcome."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tarsy.models import Message, TimelineEvent
from tarsy.services.citations import session_citations
from tarsy.services.intake.alerts import session_submit
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOOLS_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers" / "tools_server.py")
ALERT = {"namespace": "prod", "pod": "api-1", "labels": {"team": "payments"}}


def _tools() -> dict:
    return {"transport": {"type": "stdio", "command": sys.executable, "args": [TOOLS_SERVER, "stdio"]}}


def _react_action(tool: str, arguments: str) -> dict:
    return {"text": f"Thought: check.\nAction: tools.{tool}\nAction Input: {arguments}"}


def _final(text: str) -> dict:
    return {"text": f"Thought: enough.\nFinal Answer: {text}"}


def _tool_events(session) -> dict[str, TimelineEvent]:
    events = TimelineEvent.objects.filter(session=session, event_type="tool_result").order_by("id")
    return {event.metadata["evidence_id"]: event for event in events}


def _ids(entries: list[dict]) -> list[str]:
    return [entry["id"] for entry in entries]


@pytest.mark.timeout(150)
def test_an_analysis_citing_its_tool_results_and_alert_fields_verifies(scripted_config, worker):
    scripted_config({
        "KubernetesAgent": [
            _react_action("pod_info", '{"namespace": "prod", "pod": "api-1"}'),
            _react_action("echo", '{"text": "connection refused to db:5432"}'),
            _final("api-1 in prod is Running [E1][A:namespace] but cannot reach its database [E2]; "
                   "the payments team owns it [A:labels.team]."),
        ],
        "executive_summary": ["api-1 cannot reach its database."],
    }, tarsy={"mcp_servers": {"tools": _tools()}, "agents": {"KubernetesAgent": {"mcp_servers": ["tools"]}}})
    proc = worker()
    session = session_submit(alert_type="kubernetes", data=ALERT)
    (done,) = wait_terminal([session.id], 90, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])

    evidence = _tool_events(done)
    assert list(evidence) == ["E1", "E2"]
    observations = list(Message.objects.filter(session=done, role="user", content__startswith="Observation:")
                        .order_by("sequence_number").values_list("content", flat=True))
    assert [o.split(")", 1)[0] for o in observations] == ["Observation: Evidence [E1] (cite it as [E1]",
                                                         "Observation: Evidence [E2] (cite it as [E2]"]

    citations = session_citations(session_id=done.id)
    assert _ids(citations["valid"]) == ["E1", "A:namespace", "E2", "A:labels.team"]
    assert [c.get("event_id") for c in citations["valid"] if c["kind"] == "tool_result"] == [
        evidence["E1"].id, evidence["E2"].id]
    assert citations["invalid"] == [] and citations["uncited"] == [] and citations["uncited_findings"] == []

    body = APIClient(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/sessions/{done.id}").json()
    assert _ids(body["citations"]["valid"]) == ["E1", "A:namespace", "E2", "A:labels.team"]
    assert body["citations"]["invalid"] == [] and body["citations"]["uncited"] == []


@pytest.mark.timeout(180)
def test_synthesis_cites_the_parallel_agents_evidence_and_native_results_carry_ids(scripted_config, worker):
    agent_turns = [
        {"tool_calls": [{"name": "tools.pod_info", "arguments": {"namespace": "prod", "pod": "api-1"}}]},
        {"text": "api-1 is Running {evidence}."},
    ]
    scripted_config({
        "Pods": agent_turns,
        "Network": [{"tool_calls": [{"name": "tools.echo", "arguments": {"text": "db:5432 refused"}}]},
                    {"text": "The database refuses connections {evidence}."}],
        "SynthesisAgent": ["Both agents agree: api-1 runs but its database refuses connections {evidence}."],
        "executive_summary": ["The database refuses connections."],
    }, tarsy={
        "mcp_servers": {"tools": _tools()},
        "agents": {"Pods": {"mcp_servers": ["tools"], "iteration_strategy": "native-thinking"},
                   "Network": {"mcp_servers": ["tools"], "iteration_strategy": "native-thinking"}},
        "agent_chains": {"parallel": {"alert_types": ["parallel"], "stages": [
            {"name": "investigate", "agents": [{"name": "Pods"}, {"name": "Network"}]}]}},
    })
    proc = worker(concurrency=2)
    session = session_submit(alert_type="parallel", data=ALERT)
    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])

    evidence = _tool_events(done)
    assert sorted(evidence) == ["E1", "E2"]  # one counter for the session: the two agents never share an id
    tool_messages = Message.objects.filter(session=done, role="tool").values_list("content", flat=True)
    assert sorted(m.split(". ", 1)[0] for m in tool_messages) == ["Evidence [E1] (cite it as [E1])",
                                                                  "Evidence [E2] (cite it as [E2])"]
    citations = session_citations(session_id=done.id)
    assert sorted(_ids(citations["valid"])) == ["E1", "E2"]
    assert citations["invalid"] == [] and citations["uncited"] == []


@pytest.mark.timeout(180)
def test_made_up_ids_and_another_sessions_ids_are_flagged(scripted_config, worker):
    scripted_config({
        "Busy": [_react_action("echo", '{"text": "one"}'), _react_action("echo", '{"text": "two"}'),
                 _react_action("echo", '{"text": "three"}'),
                 _final("Two of the echoes [E1][E2].\n\nThe third echo was never looked at by anyone in this run.")],
        "Brief": [_react_action("pod_info", '{"namespace": "prod", "pod": "api-1"}'),
                  _final("api-1 is Running [E1]; its disk is full [E3]; the node is down [E99]; "
                         "the owner is [A:labels.owner].")],
        "executive_summary": ["Summary."],
    }, tarsy={
        "mcp_servers": {"tools": _tools()},
        "agents": {"Busy": {"mcp_servers": ["tools"]}, "Brief": {"mcp_servers": ["tools"]}},
        "agent_chains": {
            "busy": {"alert_types": ["busy"], "stages": [{"name": "s", "agents": [{"name": "Busy"}]}]},
            "brief": {"alert_types": ["brief"], "stages": [{"name": "s", "agents": [{"name": "Brief"}]}]},
        },
    })
    proc = worker()
    other = session_submit(alert_type="busy", data=ALERT)
    (other,) = wait_terminal([other.id], 90, proc)
    session = session_submit(alert_type="brief", data=ALERT)
    (done,) = wait_terminal([session.id], 90, proc)
    assert (other.status, done.status) == ("completed", "completed"), proc.log()[-3000:]
    assert "E3" in _tool_events(other)  # the id cited below is real, but evidence of the other session
    assert list(_tool_events(done)) == ["E1"]

    citations = session_citations(session_id=done.id)
    assert _ids(citations["valid"]) == ["E1"]
    assert [(c["id"], c["reason"]) for c in citations["invalid"]] == [
        ("E3", "not_in_session"), ("E99", "not_in_session"), ("A:labels.owner", "no_alert_field")]
    other_citations = session_citations(session_id=other.id)
    assert other_citations["invalid"] == [] and _ids(other_citations["uncited"]) == ["E3"]  # never cited
    unsupported = [finding["text"] for finding in other_citations["uncited_findings"]]
    assert unsupported == ["The third echo was never looked at by anyone in this run."]

    body = APIClient(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/sessions/{done.id}").json()
    assert _ids(body["citations"]["invalid"]) == ["E3", "E99", "A:labels.owner"]
