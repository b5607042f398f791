"""Dashboard pages rendered by Django (the test client; no browser): content, escaping, filters, access, big
timelines."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tarsy.models import (
    AgentExecution,
    AlertSession,
    LLMInteraction,
    MCPInteraction,
    Pseudonym,
    SessionCounters,
    Stage,
    TimelineEvent,
)
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db(transaction=True)]

EVIL = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def _session(**fields) -> AlertSession:
    defaults = {"alert_data": f'{{"pod": "web-1", "note": "{EVIL}"}}', "alert_type": "kubernetes",
                "chain_id": "kubernetes", "status": "completed", "author": "alice"}
    session = AlertSession.objects.create(**{**defaults, **fields})
    SessionCounters.objects.create(session=session)  # as intake makes it
    return session


def _stage(session: AlertSession, events: int = 3) -> AgentExecution:
    stage = Stage.objects.create(session=session, name="analysis", index=0, status="completed")
    execution = AgentExecution.objects.create(stage=stage, session=session, agent_name="KubernetesAgent",
                                              iteration_strategy="react", status="completed")
    for n in range(1, events + 1):
        TimelineEvent.objects.create(session=session, stage=stage, execution=execution, sequence_number=n,
                                     event_type="llm_thinking", content=f"step {n} **bold** {EVIL}",
                                     metadata={"source": "react"})
    return execution


def _no_live_markup(html: str) -> None:
    assert "<script>window.__xss" not in html
    assert not re.search(r"<img[^>]*onerror", html)


def test_session_page_escapes_alert_tool_and_llm_text():
    session = _session(final_analysis=f"**Root** cause {EVIL}", executive_summary=f"Summary {EVIL}")
    execution = _stage(session)
    TimelineEvent.objects.create(session=session, stage=execution.stage, execution=execution, sequence_number=10,
                                 event_type="mcp_tool_call", content=EVIL,
                                 metadata={"server": "k8s", "tool": "pods_list", "arguments": {"ns": EVIL}})
    html = Client().get(f"/sessions/{session.id}").content.decode()
    _no_live_markup(html)
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert "<strong>Root</strong>" in html and "<strong>bold</strong>" in html
    assert "k8s.pods_list" in html


def test_a_timeline_of_600_events_renders_every_event():
    session = _session()
    _stage(session, events=600)
    html = Client().get(f"/sessions/{session.id}").content.decode()
    assert html.count('class="ev ev-llm_thinking') == 600


def test_completed_events_are_served_as_sanitized_fragments():
    session = _session()
    execution = _stage(session, events=2)
    ids = list(TimelineEvent.objects.filter(execution=execution).values_list("id", flat=True))
    body = Client().get(f"/sessions/{session.id}/events?ids={ids[0]},{ids[1]},999999").json()
    assert set(body["events"]) == {str(i) for i in ids} and body["missing"] == [999999]
    for fragment in body["events"].values():
        _no_live_markup(fragment)


def test_history_filters_search_and_pagination_come_from_the_url():
    for n in range(30):
        _session(alert_type="kubernetes" if n % 2 else "database", author=f"user{n % 3}",
                 executive_summary=f"summary number {n}")
    _session(final_analysis="the needle is here", author="bob")
    client = Client()
    page = client.get("/?alert_type=database&page_size=10").content.decode()
    assert page.count('<tr data-session-id=') == 10 and "Page 1 of 2" in page
    found = client.get("/?search=needle").content.decode()
    assert found.count('<tr data-session-id=') == 1 and "bob" in found
    short = client.get("/?search=ne").content.decode()
    assert "at least 3 characters" in short
    assert 'value="database" selected' in page


def test_active_fragment_lists_running_and_queued_sessions():
    _session(status="in_progress", alert_type="running-type")
    _session(status="pending", alert_type="queued-type")
    html = Client().get("/?fragment=active").content.decode()
    assert "running-type" in html and "#1 in queue" in html


def test_trace_lists_llm_conversations_and_mcp_calls():
    session = _session()
    execution = _stage(session, events=0)
    LLMInteraction.objects.create(session=session, execution=execution, iteration=1, interaction_type="iteration",
                                  provider="scripted", conversation=[{"role": "system", "content": "You are X"},
                                                                     {"role": "assistant", "content": EVIL}],
                                  input_tokens=10, output_tokens=5, total_tokens=15, duration_ms=1200)
    MCPInteraction.objects.create(session=session, execution=execution, iteration=1, server="k8s", tool="pods_list",
                                  arguments={"ns": "prod"}, result='{"items": []}', duration_ms=40)
    html = Client().get(f"/sessions/{session.id}/trace").content.decode()
    _no_live_markup(html)
    assert "You are X" in html and "k8s.pods_list" in html and "1.2 s" in html and "&quot;items&quot;: []" in html


def test_trace_shows_what_the_model_saw_only_when_identifiers_were_pseudonymised():
    session = _session()
    assert "What the model saw" not in Client().get(f"/sessions/{session.id}/trace").content.decode()
    Pseudonym.objects.create(session=session, kind="pod", number=1, value="checkout-7d9f-x2kq")
    html = Client().get(f"/sessions/{session.id}/trace").content.decode()
    assert "What the model saw" in html and "&lt;pod:1&gt;" in html and "checkout-7d9f-x2kq" in html


def test_submit_and_system_pages_render(tmp_path):
    write_config(tmp_path / "cfg", tarsy={"mcp_servers": {"demo-tools": {"transport": {"type": "stdio",
                                                                                        "command": "true"}}}})
    client = Client()
    assert "demo-tools" in client.get("/submit").content.decode()
    system = client.get("/system").content.decode()
    assert "Versions" in system and "Django" in system
    earlier = _session()
    assert "web-1" in client.get(f"/submit?from={earlier.id}").content.decode()


def test_non_loopback_clients_are_refused_in_auth_mode_none():
    response = Client(REMOTE_ADDR="10.1.2.3").get("/")
    assert response.status_code == 403


def test_token_mode_sends_browsers_to_the_login_page(tmp_path):
    write_config(tmp_path / "cfg", tarsy={"system": {"auth": {"mode": "token"}}})
    response = Client().get("/system")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_static_files_are_served_without_collectstatic():
    response = Client().get("/static/tarsy/session.js")
    assert response.status_code == 200
