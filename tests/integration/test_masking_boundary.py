"""Outside text masked on its way in, end to end on PostgreSQL: chat questions, LLM error bodies, MCP errors,
tool-call arguments, runbook URLs, and tool output with NUL bytes. Steps run in-process as a worker runs them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from agents.mcp import health
from agents.mcp.pool import shutdown_pool
from tarsy.models import (
    AgentExecution,
    AlertSession,
    ChatUserMessage,
    Event,
    LLMInteraction,
    MCPInteraction,
    Message,
    Stage,
    TimelineEvent,
)
from tarsy.pipeline.dispatch import dispatch_pending
from tarsy.pipeline.finish import session_finish
from tarsy.pipeline.iteration import iteration_run
from tarsy.services.intake.alerts import session_submit
from tests.fakes.fake_openai import FakeOpenAI
from tests.support.configdir import scripted_provider, write_config

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(120)]

FAKES = Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers"
PASSWORD = "hunter2xyz"
TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"
MAX_STEPS = 8


@pytest.fixture
def api() -> APIClient:
    return APIClient(REMOTE_ADDR="127.0.0.1")


@pytest.fixture(autouse=True)
def _own_mcp_servers():
    """The servers these tests start belong to this process's pool: stop them afterwards."""
    health.clear_cache()
    yield
    shutdown_pool()
    health.clear_cache()


def _stdio(script: str, *args: str, **extra: Any) -> dict[str, Any]:
    return {"transport": {"type": "stdio", "command": sys.executable, "args": [str(FAKES / script), *args]},
            **extra}


def _run_session(session: AlertSession) -> AlertSession:
    """Run every execution of the session's stages to the end, then close it, as workers would."""
    for _ in range(MAX_STEPS):
        pending = AgentExecution.objects.filter(session=session).exclude(
            status__in=["completed", "failed", "timed_out", "cancelled"]).first()
        if pending is None:
            break
        for _ in range(MAX_STEPS):
            pending.refresh_from_db()
            if pending.is_terminal:
                break
            iteration_run(pending.id, pending.iterations_completed + 1)
    session_finish(session_id=session.id)
    session.refresh_from_db()
    return session


def _start(data: str = "pod web-1 CrashLoopBackOff", **fields: Any) -> AlertSession:
    session = session_submit(data=data, alert_type="kubernetes", **fields)
    assert dispatch_pending() == [str(session.id)]
    session.refresh_from_db()
    return session


def _stored(session: AlertSession) -> dict[str, list[str]]:
    """Every text a user, the LLM or a log reader can get at for this session, by where it is kept."""
    session = AlertSession.all_objects.get(id=session.id)
    dumps = json.dumps
    return {
        "session": [session.runbook_url, session.error_message, session.final_analysis, session.alert_data],
        "stages": [s.error_message for s in Stage.objects.filter(session=session)],
        "executions": [e.error_message for e in AgentExecution.objects.filter(session=session)],
        "chat": list(ChatUserMessage.objects.filter(chat__session=session).values_list("content", flat=True)),
        "timeline": [e.content + dumps(e.metadata) for e in TimelineEvent.objects.filter(session=session)],
        "messages": list(Message.objects.filter(session=session).values_list("content", flat=True)),
        "llm": [i.error_message + dumps(i.conversation) for i in LLMInteraction.objects.filter(session=session)],
        "mcp": [dumps(i.arguments) + i.result + i.error_message
                for i in MCPInteraction.objects.filter(session=session)],
        "events": [dumps(e.payload) for e in Event.objects.filter(session=session)],
    }


def _leaks(stored: dict[str, list[str]], *secrets: str) -> dict[str, list[str]]:
    return {where: [t for t in texts if any(s in (t or "") for s in secrets)] for where, texts in stored.items()
            if any(s in (t or "") for t in texts for s in secrets)}


def test_a_chat_question_with_a_password_is_masked_in_every_row_and_in_the_prompt(config_dir, api):
    write_config(config_dir, tarsy={
        "defaults": {"llm_provider": "scripted"},
        "agents": {"KubernetesAgent": {"mcp_servers": []}, "ChatAgent": {"mcp_servers": []}},
    }, providers={"scripted": scripted_provider({
        "KubernetesAgent": ["Thought: seen it.\nFinal Answer: web-1 cannot log in to its database."],
        "executive_summary": ["web-1 cannot reach its database."],
        "ChatAgent": ["Thought: answer it.\nFinal Answer: Rotate the secret, then restart web-1."],
    })})
    session = _run_session(_start())
    assert session.status == "completed"

    asked = api.post(f"/api/v1/sessions/{session.id}/chat/messages",
                     {"content": f"We changed it to password: {PASSWORD} - is that the cause?"}, format="json")
    assert asked.status_code in (200, 201, 202), asked.content
    session = _run_session(session)

    stored = _stored(session)
    assert _leaks(stored, PASSWORD) == {}
    (question,) = stored["chat"]
    assert question.startswith("We changed it to password: __MASKED_") and question.endswith("is that the cause?")
    asked_event = TimelineEvent.objects.get(session=session, event_type="user_question")
    assert asked_event.content == question
    chat_call = LLMInteraction.objects.get(session=session, interaction_type="chat")
    assert any(question in m["content"] for m in chat_call.conversation)  # the prompt carries the masked question
    listed = api.get(f"/api/v1/sessions/{session.id}/chat/messages").content.decode()
    assert PASSWORD not in listed and "__MASKED_" in listed


def test_an_llm_error_body_with_a_token_is_masked_wherever_the_error_is_kept(config_dir):
    fake = FakeOpenAI(repeat_last=True).start()
    try:
        # One normal reply, then the forced conclusion fails: its error becomes the execution's and session's error.
        fake.queue({"text": "Thought: look at the pods.\nAction: k8s.get_pods\nAction Input: {}"},
                   {"status": 401, "message": f"invalid credentials: password={PASSWORD} token: {TOKEN}"})
        write_config(config_dir, tarsy={
            "defaults": {"llm_provider": "gateway", "max_iterations": 1},
            "agents": {"KubernetesAgent": {"mcp_servers": []}},
        }, providers={"gateway": {"type": "openai", "model": "gpt-test", "api_key_env": "FAKE_LLM_KEY",
                                  "base_url": f"{fake.url}/v1"}})
        with pytest.MonkeyPatch.context() as env:
            env.setenv("FAKE_LLM_KEY", "test-key")
            session = _run_session(_start())
        sent_to_llm = [json.dumps(body) for body in fake.bodies()]
    finally:
        fake.stop()

    assert session.status == "failed"
    stored = _stored(session)
    assert _leaks(stored, PASSWORD, TOKEN) == {}
    assert not [b for b in sent_to_llm if PASSWORD in b or TOKEN in b]
    failed = LLMInteraction.objects.get(session=session, success=False)
    execution = AgentExecution.objects.get(session=session)
    errors = [e.content for e in TimelineEvent.objects.filter(session=session, event_type="error",
                                                              metadata__has_key="code")]
    assert errors
    for kept in (failed.error_message, execution.error_message, session.error_message, *errors):
        assert "invalid credentials" in kept and "__MASKED_" in kept, kept


def test_an_executive_summary_error_with_a_token_is_stored_and_logged_masked(config_dir, caplog):
    fake = FakeOpenAI().start()
    try:
        fake.queue({"text": "Thought: seen it.\nFinal Answer: web-1 lost its database login."},
                   {"status": 401, "message": f"revoked: token: {TOKEN}"})
        write_config(config_dir, tarsy={
            "defaults": {"llm_provider": "gateway"},
            "agents": {"KubernetesAgent": {"mcp_servers": []}},
        }, providers={"gateway": {"type": "openai", "model": "gpt-test", "api_key_env": "FAKE_LLM_KEY",
                                  "base_url": f"{fake.url}/v1"}})
        with pytest.MonkeyPatch.context() as env:
            env.setenv("FAKE_LLM_KEY", "test-key")
            session = _run_session(_start())
    finally:
        fake.stop()

    assert session.status == "completed" and session.executive_summary == ""
    assert "revoked" in session.executive_summary_error and TOKEN not in session.executive_summary_error
    assert _leaks(_stored(session), TOKEN) == {}
    summary_call = LLMInteraction.objects.get(session=session, interaction_type="executive_summary")
    assert "revoked" in summary_call.error_message and "__MASKED_" in summary_call.error_message
    logged = [r.getMessage() for r in caplog.records if "executive summary" in r.getMessage()]
    assert logged and not [m for m in logged if TOKEN in m]


ECHO_TURNS = {
    "react": [f'Thought: check the login.\nAction: tools.echo\nAction Input: {{"text": "password: {PASSWORD}"}}',
              "Thought: enough.\nFinal Answer: the login works."],
    "native-thinking": [{"text": "", "tool_calls": [{"id": "c1", "name": "tools.echo",
                                                     "arguments": {"text": f"password: {PASSWORD}"}}]},
                        {"text": "the login works."}],
}


@pytest.mark.services
@pytest.mark.parametrize("strategy", sorted(ECHO_TURNS))
def test_mcp_start_errors_and_tool_arguments_are_masked_on_postgres(config_dir, api, strategy):
    start_error = f"cannot log in to the cluster: token: {TOKEN}"
    write_config(config_dir, tarsy={
        "defaults": {"llm_provider": "scripted", "iteration_strategy": strategy},
        "mcp_servers": {"leaky": _stdio("hostile_server.py", "refuse-start", start_error),
                        "tools": _stdio("tools_server.py", "stdio")},
        "agents": {"KubernetesAgent": {"mcp_servers": ["leaky", "tools"]}},
    }, providers={"scripted": scripted_provider({
        "KubernetesAgent": ECHO_TURNS[strategy],
        "executive_summary": ["The login works."],
    })})

    session = _run_session(_start())

    assert session.status == "completed", session.error_message
    assert _leaks(_stored(session), TOKEN) == {}
    unavailable = TimelineEvent.objects.filter(session=session, event_type="error", metadata__server_name="leaky")
    assert unavailable and all("cannot log in to the cluster" in e.content and "__MASKED_" in e.content
                               for e in unavailable)
    echo = MCPInteraction.objects.get(session=session, tool="echo")
    assert PASSWORD not in json.dumps(echo.arguments) and echo.arguments["text"].startswith("password: __MASKED_")
    shown = TimelineEvent.objects.filter(session=session, event_type__in=["llm_tool_call", "mcp_tool_call",
                                                                          "tool_result"])
    assert len(shown) == 3
    for event in shown:
        assert PASSWORD not in event.content + json.dumps(event.metadata), (event.event_type, event.content)

    servers = api.get("/api/v1/system/mcp-servers").json()["servers"]  # the system page's detail
    (leaky,) = [s for s in servers if s["name"] == "leaky"]
    assert "cannot log in to the cluster" in leaky["error"] and TOKEN not in leaky["error"]


def test_tool_output_with_nul_bytes_is_stored_and_the_investigation_goes_on(config_dir):
    write_config(config_dir, tarsy={
        "defaults": {"llm_provider": "scripted"},
        "mcp_servers": {"bin": _stdio("hostile_server.py", "nul")},
        "agents": {"KubernetesAgent": {"mcp_servers": ["bin"]}},
    }, providers={"scripted": scripted_provider({
        "KubernetesAgent": ["Thought: read the dump.\nAction: bin.dump\nAction Input: {}",
                            "Thought: enough.\nFinal Answer: the dump is readable."],
        "executive_summary": ["The dump is readable."],
    })})

    session = _run_session(_start())

    assert session.status == "completed", session.error_message
    dump = MCPInteraction.objects.get(session=session, tool="dump")
    assert dump.success and dump.result.startswith("header") and dump.result.endswith("tail")
    assert "\x00" not in dump.result
    result_event = TimelineEvent.objects.get(session=session, event_type="tool_result")
    assert "binary" in result_event.content
    assert any("binary" in m.content for m in Message.objects.filter(session=session, role="user"))


def test_a_runbook_url_with_a_token_is_stored_and_shown_masked_and_not_fetched(config_dir, api):
    secret = "abc123notforyoureyes"
    write_config(config_dir, tarsy={
        "defaults": {"llm_provider": "scripted"},
        "agents": {"KubernetesAgent": {"mcp_servers": []}},
    }, providers={"scripted": scripted_provider({
        "KubernetesAgent": ["Thought: default runbook.\nFinal Answer: web-1 is fine."],
        "executive_summary": ["fine"],
    })})
    url = f"https://github.com/acme/runbooks/blob/main/web.md?token={secret}&plain=1"

    created = api.post("/api/v1/alerts", {"alert_type": "kubernetes", "data": "web-1 down", "runbook": url},
                       format="json")
    assert created.status_code in (200, 201, 202), created.content
    session = AlertSession.objects.get(id=created.json()["session_id"])
    dispatch_pending()
    session = _run_session(session)

    assert session.runbook_url == ("https://github.com/acme/runbooks/blob/main/web.md"
                                   "?token=__MASKED_URL_CREDENTIAL__&plain=1")
    assert _leaks(_stored(session), secret) == {}
    assert secret not in api.get(f"/api/v1/sessions/{session.id}").content.decode()
    warning = TimelineEvent.objects.get(session=session, event_type="error", metadata__warning=True)
    assert "credentials were masked" in warning.content
