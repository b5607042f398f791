"""A fallback mid-investigation: the conversation carries over to a provider of another family, Gemini's thought
signatures do not, and the execution stays on the fallback (real SDKs against wire-level fakes)."""

from __future__ import annotations

import json

import pytest

from controllers.base import StepStatus
from tarsy.models import AgentExecution, TimelineEvent
from tarsy.pipeline.finish import session_finish
from tests.fakes.fake_gemini import function_call
from tests.support.configdir import scripted_provider

from .conftest import (
    ALERT_TYPE,
    interactions,
    messages,
    only_execution,
    react_action,
    run_to_end,
    start_session,
    timeline,
    wire_providers,
)

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(90)]

FINAL = "web-1 crashes because configmap app-config is missing."
SIGNATURE = "c2lnLTE="


def test_the_conversation_moves_to_the_fallback_without_the_first_providers_state(configure, llm_servers):
    gemini, openai = llm_servers
    configure({"default": ["unused"]}, strategy="native-thinking", providers=wire_providers(gemini, openai),
              agents={"SreAgent": {"mcp_servers": ["k8s"], "llm_provider": "gemini", "fallback_providers": ["gpt"]}})
    gemini.queue({"parts": [function_call("k8s__get_pods", {"namespace": "prod"}, signature=SIGNATURE)]},
                 *[{"status": 503, "message": "the model is overloaded"}] * 3)  # the attempt and its two retries
    openai.queue({"text": FINAL})
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    assert outcomes[-1].final_analysis == FINAL
    assert [(i.provider, i.success) for i in interactions(execution.id)] == [("gemini", True), ("gemini", False),
                                                                            ("gpt", True)]
    # the fallback got the whole conversation: the tool call and its result, but not Gemini's signature
    (sent,) = openai.bodies()
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
    assert sent["messages"][2]["tool_calls"][0]["function"]["name"] == "k8s__get_pods"
    assert SIGNATURE not in json.dumps(sent)
    assert all(m.provider_state is None for m in messages(execution.id))
    row = AgentExecution.objects.get(id=execution.id)
    assert (row.llm_provider, row.llm_backend) == ("gpt", "langchain")
    events = timeline(execution.id)
    (switched,) = [e for e in events if e.event_type == "error"]
    assert switched.metadata == {"code": "server_error", "retryable": True, "warning": True, "provider": "gemini",
                                 "fallback_provider": "gpt"}
    assert events[-1].event_type == "final_analysis" and events[-1].metadata["fallback_provider"] == "gpt"


@pytest.mark.parametrize("strategy", ["react", "native-thinking"])
def test_a_fallback_that_calls_tools_keeps_the_execution_and_its_timeline_marked(configure, strategy):
    """The fallback's replies go through every event type a strategy writes (tool calls included), and the
    execution's next iterations go to it without asking the failed provider again."""
    pods = {"namespace": "prod"}
    replies = ([react_action("Check the pods.", "k8s.get_pods", json.dumps(pods)),
                f"Thought: That explains it.\nFinal Answer: {FINAL}"] if strategy == "react"
               else [{"thinking": "Check the pods.", "tool_calls": [{"name": "k8s.get_pods", "arguments": pods}]},
                     {"text": FINAL}])
    throttled = {"error": {"message": "quota exhausted", "code": "rate_limit", "retryable": True}}
    configure({"SreAgent": [throttled]}, strategy=strategy,
              providers={"backup": scripted_provider({"SreAgent": replies})},
              agents={"SreAgent": {"mcp_servers": ["k8s"], "fallback_providers": ["backup"]}})
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    assert [(i.iteration, i.provider, i.success) for i in interactions(execution.id)] == [
        (1, "scripted", False), (1, "backup", True), (2, "backup", True)]
    events = timeline(execution.id)
    assert [e.metadata.get("fallback_provider") for e in events if e.event_type == "error"] == ["backup"]
    answered = [e for e in events if e.event_type in ("llm_thinking", "llm_tool_call", "final_analysis")]
    assert {e.event_type for e in answered} >= {"llm_tool_call", "final_analysis"}
    assert all(e.metadata.get("fallback_provider") == "backup" for e in answered), [
        (e.event_type, e.metadata) for e in answered]


def test_an_executive_summary_answered_by_a_fallback_leaves_the_same_warning_as_an_iteration(configure):
    overloaded = {"error": {"message": "model overloaded", "code": "server_error", "retryable": True}}
    summary = "web-1 lacks its configmap."
    chain = {"alert_types": [ALERT_TYPE], "fallback_providers": ["backup"],
             "stages": [{"name": "investigate", "agents": [{"name": "SreAgent"}]}]}
    configure({"SreAgent": [f"Thought: Seen enough.\nFinal Answer: {FINAL}"], "executive_summary": [overloaded]},
              providers={"backup": scripted_provider({"executive_summary": [summary]})}, chains={"ctrl": chain})
    session = start_session()
    run_to_end(only_execution(session).id)

    session_finish(session_id=session.id)

    session.refresh_from_db()
    assert (session.status, session.executive_summary) == ("completed", summary)
    (warning,) = TimelineEvent.objects.filter(session=session, execution__isnull=True, event_type="error")
    assert warning.metadata == {"code": "server_error", "retryable": True, "warning": True, "provider": "scripted",
                                "fallback_provider": "backup"}
    assert warning.content == "LLM provider scripted failed (server_error: model overloaded); continuing on backup"
