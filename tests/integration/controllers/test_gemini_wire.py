"""Native thinking against the fake Gemini server (the real google-genai SDK on the wire)."""

from __future__ import annotations

import pytest

from controllers.base import StepStatus
from tests.fakes.fake_gemini import FakeGemini, function_call, text

from .conftest import event_types, interactions, messages, only_execution, run_to_end, start_session, timeline

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

KEY_ENV = "TARSY_TEST_GEMINI_KEY"


@pytest.fixture
def gemini(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-gemini-key")
    server = FakeGemini()
    server.start()
    yield server
    server.stop()


def _configure(configure, gemini, agent: dict, **kwargs):
    provider = {"type": "google", "model": "gemini-2.5-pro", "api_key_env": KEY_ENV, "base_url": gemini.url}
    chain = {"gemini": {"alert_types": ["gemini-alert"],
                        "stages": [{"name": "investigate", "agents": [{"name": "GeminiAgent"}]}]}}
    return configure({"default": ["unused"]}, strategy="native-thinking", providers={"gemini": provider},
                     agents={"GeminiAgent": {"llm_provider": "gemini", **agent}}, chains=chain, **kwargs)


def test_native_tool_results_become_their_own_events(configure, gemini):
    _configure(configure, gemini, {"mcp_servers": [], "native_tools": {"code_execution": True,
                                                                       "google_search": True}})
    gemini.queue({
        "parts": [{"text": "Compute it.", "thought": True},
                  {"executableCode": {"language": "PYTHON", "code": "print(6 * 7)"}},
                  {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}},
                  {"text": "OOMKilled pods need a higher memory limit: 42 MiB more."}],
        "grounding": {"webSearchQueries": ["kubernetes oomkilled"],
                      "groundingChunks": [{"web": {"uri": "https://kubernetes.io/docs", "title": "Kubernetes docs"}}]},
    })
    execution = only_execution(start_session("gemini-alert"))

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.COMPLETED]
    events = timeline(execution.id)
    assert [e.event_type for e in events] == ["llm_thinking", "final_analysis", "code_execution",
                                              "google_search_result"]
    _, final, code, search = events
    assert final.content == "OOMKilled pods need a higher memory limit: 42 MiB more."
    assert code.content == "```python\nprint(6 * 7)\n```\n\nOutput:\n```\n42\n```"
    assert code.metadata == {"code": "print(6 * 7)", "result": "42\n", "outcome": "OUTCOME_OK"}
    assert search.content == "Searched: kubernetes oomkilled\n- [Kubernetes docs](https://kubernetes.io/docs)"
    assert search.metadata["queries"] == ["kubernetes oomkilled"]
    body = gemini.requests[0].body
    assert {key for tool in body["tools"] for key in tool} == {"codeExecution", "googleSearch"}


def test_thought_signatures_go_back_and_the_forced_conclusion_binds_no_tools(configure, gemini):
    _configure(configure, gemini, {"mcp_servers": ["k8s"]}, max_iterations=1)
    gemini.queue({"parts": [{"text": "Pods first.", "thought": True},
                            function_call("k8s__get_pods", {"namespace": "prod"}, signature="c2lnLTE=")]})
    gemini.queue(text("The configmap app-config is missing."))
    execution = only_execution(start_session("gemini-alert"))

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    assert event_types(execution.id) == ["llm_thinking", "llm_tool_call", "mcp_tool_call", "tool_result",
                                         "final_analysis"]
    assistant = messages(execution.id)[2]
    (call,) = assistant.tool_calls
    assert assistant.provider_state == {"google": {"function_call_signatures": {call["id"]: "c2lnLTE="}}}
    first, forced = gemini.requests
    assert "functionDeclarations" in first.body["tools"][0]
    assert not any("functionDeclarations" in tool for tool in forced.body.get("tools", []))
    replayed = [part for content in forced.body["contents"] for part in content["parts"] if "functionCall" in part]
    assert [(p["functionCall"]["name"], p["thoughtSignature"]) for p in replayed] == [("k8s__get_pods", "c2lnLTE=")]
    assert [i.interaction_type for i in interactions(execution.id)] == ["iteration", "forced_conclusion"]


def test_the_same_gemini_provider_serves_react_through_google_genai_without_native_tools(configure, gemini):
    """The adapter follows the provider, not the strategy: ReAct on a Gemini provider speaks google-genai (its
    thinking streams like native thinking's), and asks for none of the provider's server-side tools."""
    provider = {"type": "google", "model": "gemini-2.5-pro", "api_key_env": KEY_ENV, "base_url": gemini.url,
                "native_tools": {"google_search": True}}
    chain = {"gemini": {"alert_types": ["gemini-alert"],
                        "stages": [{"name": "investigate", "agents": [{"name": "GeminiAgent"}]}]}}
    configure({"default": ["unused"]}, strategy="react", providers={"gemini": provider},
              agents={"GeminiAgent": {"llm_provider": "gemini", "mcp_servers": []}}, chains=chain)
    gemini.queue({"parts": [{"text": "The pod restarts.", "thought": True},
                            {"text": "Thought: it is the configmap.\nFinal Answer: app-config is missing."}]})
    execution = only_execution(start_session("gemini-alert"))

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.COMPLETED]
    assert outcomes[0].final_analysis == "app-config is missing."
    (request,) = gemini.requests
    assert request.path.endswith(":streamGenerateContent") and "tools" not in request.body
    assert request.body["generationConfig"]["thinkingConfig"]["include_thoughts"] is True
    thinking = [e for e in timeline(execution.id) if e.event_type == "llm_thinking"]
    assert [(e.content, e.metadata["source"]) for e in thinking] == [("The pod restarts.", "native"),
                                                                      ("it is the configmap.", "react")]
