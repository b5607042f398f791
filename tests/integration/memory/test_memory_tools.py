"""The built-in `tarsy` MCP server's tools: in process on either database, and called by a ReAct agent through
a real worker, which starts the server as a stdio child on the same database."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from tarsy.models import AlertSession, MCPInteraction, TimelineEvent
from tarsy.pipeline.memory import tools
from tarsy.services import memories
from tests.support.sessions import wait_terminal

TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"


def _past_session(**fields) -> AlertSession:
    values = {"alert_data": "checkout CrashLoopBackOff", "alert_type": "kubernetes", "chain_id": "kubernetes",
              "status": "completed", "title": "checkout crash loop", "completed_at": timezone.now(),
              "final_analysis": f"checkout-config was deleted; restored it. token: {TOKEN}"} | fields
    return AlertSession.objects.create(**values)


@pytest.mark.django_db
def test_the_tools_answer_masked_cited_snippets_with_links(scripted_config):
    scripted_config({"KubernetesAgent": ["Final Answer: x"]})
    past = _past_session()
    _past_session(alert_type="node", final_analysis="checkout node disk full")
    memory = memories.memory_create(kind="incident", text="checkout crash loop: restore config map checkout-config",
                                    alert_type="kubernetes")
    memories.memory_create(kind="fact", text="node-3 disk fills with logs", alert_type="node")

    recalled = tools.recall_past_investigations("checkout config map crash")
    assert f"[M{memory.id}] incident" in recalled and "node-3" not in recalled
    assert "No memory matches" in tools.recall_past_investigations("payments ledger drift")

    found = tools.search_past_sessions("checkout", alert_type="kubernetes", since="7d")
    assert f"Session {past.id}" in found and f"/sessions/{past.id}" in found
    assert TOKEN not in found and "__MASKED_" in found and "node disk" not in found
    assert "No completed session" in tools.search_past_sessions("checkout", since="2999-01-01")
    for bad in (lambda: tools.search_past_sessions("checkout", since="last tuesday"),
                lambda: tools.recall_past_investigations("  ")):
        with pytest.raises(tools.ToolInputError):
            bad()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_a_react_agent_recalls_through_the_tarsy_mcp_server(scripted_config, worker):
    past = _past_session()
    memory = memories.memory_create(kind="incident", text="checkout crash loop: restore config map checkout-config",
                                    alert_type="kubernetes")
    script = {"KubernetesAgent": [
        {"text": 'Thought: Ask memory first.\nAction: tarsy.recall_past_investigations\n'
                 'Action Input: {"query": "checkout crash loop config map"}'},
        {"text": 'Thought: And past sessions.\nAction: tarsy.search_past_sessions\n'
                 'Action Input: {"query": "checkout", "since": "7d"}'},
        {"text": "Thought: Done.\nFinal Answer: checkout-config is missing again {evidence}."},
    ], "executive_summary": ["Config map missing again."]}
    scripted_config(script, tarsy={"agents": {"KubernetesAgent": {"mcp_servers": ["tarsy"]}}})
    proc = worker()
    from rest_framework.test import APIClient

    response = APIClient().post("/api/v1/alerts", {"alert_type": "kubernetes", "data": "checkout CrashLoopBackOff"},
                                format="json")
    session_id = response.json()["session_id"]
    [session] = wait_terminal([session_id], timeout=90, proc=proc)
    assert session.status == "completed", proc.log()[-3000:]
    calls = list(MCPInteraction.objects.filter(session_id=session_id).order_by("id"))
    assert [(c.server, c.tool, c.success) for c in calls] == [("tarsy", "recall_past_investigations", True),
                                                              ("tarsy", "search_past_sessions", True)]
    results = [e.content for e in TimelineEvent.objects.filter(session_id=session_id, event_type="tool_result")]
    assert f"[M{memory.id}]" in results[0]
    assert f"Session {past.id}" in results[1] and TOKEN not in json.dumps(results)
