"""LangChainProvider: real LangChain chat models against the fake OpenAI and Gemini servers."""

from __future__ import annotations

import time

from agents.config.schema import LLMProviderConfig
from agents.llm.langchain_provider import XAI_BASE_URL, LangChainProvider, build_chat_model
from agents.llm.types import (
    MESSAGES_ADAPTER,
    ConversationMessage,
    ErrorChunk,
    LLMResponse,
    TextChunk,
    ThinkingChunk,
    ToolCall,
    ToolCallChunk,
    ToolDefinition,
    UsageChunk,
)
from tests.fakes.fake_gemini import function_call
from tests.fakes.fake_gemini import usage as gemini_usage
from tests.fakes.fake_openai import error

from .conftest import make_request

LOGS_TOOL = ToolDefinition(
    name="kubernetes.pod_logs",
    description="Fetch pod logs",
    parameters={"type": "object", "properties": {"pod": {"type": "string"}}, "required": ["pod"]},
)


def test_text_streams_in_pieces(openai, openai_config, fake_openai):
    fake_openai.queue({"text": "The disk is full.", "chunk_size": 5})

    chunks = list(openai.generate(make_request(openai_config)))

    assert [c.text for c in chunks if isinstance(c, TextChunk)] == ["The d", "isk i", "s ful", "l."]
    body = fake_openai.requests[0].body
    assert body["stream"] is True and body["model"] == "gpt-test"
    assert fake_openai.requests[0].headers["authorization"] == "Bearer test-openai-key"


def test_tool_call_fragments_become_one_call_with_the_canonical_name(openai, openai_config, fake_openai):
    fake_openai.queue(
        {
            "text": "Reading logs.",
            "tool_calls": [{"id": "call_9", "name": "kubernetes__pod_logs", "arguments": {"pod": "api-7f9"}}],
            "chunk_size": 3,
        }
    )

    chunks = list(openai.generate(make_request(openai_config, tools=[LOGS_TOOL])))

    calls = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    assert calls == [ToolCall(id="call_9", name="kubernetes.pod_logs", arguments={"pod": "api-7f9"})]
    sent = fake_openai.requests[0].body["tools"]
    assert sent == [
        {
            "type": "function",
            "function": {
                "name": "kubernetes__pod_logs",
                "description": "Fetch pod logs",
                "parameters": LOGS_TOOL.parameters,
            },
        }
    ]


def test_conversation_with_tool_results_is_sent_in_openai_roles(openai, openai_config, fake_openai):
    call = ToolCall(id="call_1", name="kubernetes.pod_logs", arguments={"pod": "api"})
    fake_openai.queue({"text": "Found it."})
    request = make_request(
        openai_config,
        ConversationMessage(role="system", content="Be brief."),
        ConversationMessage(role="user", content="Why?"),
        ConversationMessage(role="assistant", content="", tool_calls=[call]),
        ConversationMessage(role="tool", content="OOMKilled", tool_call_id="call_1", tool_name=call.name),
        tools=[LOGS_TOOL],
    )

    list(openai.generate(request))

    messages = fake_openai.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[2]["tool_calls"] == [
        {
            "type": "function",
            "id": "call_1",
            "function": {"name": "kubernetes__pod_logs", "arguments": '{"pod": "api"}'},
        }
    ]
    assert (messages[3]["tool_call_id"], messages[3]["content"]) == ("call_1", "OOMKilled")


def test_usage_and_max_output_tokens(openai, openai_config, fake_openai):
    fake_openai.queue({"text": "ok", "usage": {"prompt_tokens": 200, "completion_tokens": 40, "reasoning_tokens": 15,
                                                "cached_tokens": 128}})

    chunks = list(openai.generate(make_request(openai_config, max_output_tokens=64)))

    assert [c for c in chunks if isinstance(c, UsageChunk)] == [
        UsageChunk(input_tokens=200, output_tokens=25, thinking_tokens=15, total_tokens=240, cached_tokens=128)
    ]
    body = fake_openai.requests[0].body
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 64


def test_rate_limit_is_retried(openai, openai_config, fake_openai):
    fake_openai.queue(error(429), error(429), {"text": "after the storm"})

    response = LLMResponse.collect(openai.generate(make_request(openai_config)))

    assert (response.text, response.error) == ("after the storm", None)
    assert len(fake_openai.requests) == 3


def test_a_503_is_retried_with_backoff_before_anything_falls_back(openai, openai_config, fake_openai):
    fake_openai.queue(error(503, "overloaded"), {"text": "answered on the retry"})

    response = LLMResponse.collect(openai.generate(make_request(openai_config)))

    assert (response.text, response.error) == ("answered on the retry", None)
    assert len(fake_openai.requests) == 2


def test_unauthorised_is_a_final_error(openai, openai_config, fake_openai):
    fake_openai.queue(error(401, "bad key"), {"text": "unreachable"})

    chunks = list(openai.generate(make_request(openai_config)))

    assert len(chunks) == 1 and (chunks[0].code, chunks[0].retryable) == ("auth", False)
    assert len(fake_openai.requests) == 1


def test_empty_answer_is_retried(openai, openai_config, fake_openai):
    fake_openai.queue({"text": ""}, {"text": "there you go"})

    response = LLMResponse.collect(openai.generate(make_request(openai_config)))

    assert response.text == "there you go"
    assert len(fake_openai.requests) == 2


def test_stalled_stream_is_aborted_at_the_deadline(openai, openai_config, fake_openai):
    fake_openai.queue({"text": "partial answer", "stall_after": 2})
    started = time.monotonic()

    chunks = list(openai.generate(make_request(openai_config, deadline=time.time() + 0.8)))

    assert chunks[0] == TextChunk(text="partial answer")
    assert isinstance(chunks[-1], ErrorChunk) and chunks[-1].code == "deadline_exceeded"
    assert time.monotonic() - started < 2.0


def test_missing_api_key_names_the_environment_variable(fake_openai, monkeypatch):
    monkeypatch.delenv("TARSY_TEST_NO_SUCH_KEY", raising=False)
    config = LLMProviderConfig(
        type="openai", model="gpt-test", api_key_env="TARSY_TEST_NO_SUCH_KEY", base_url=fake_openai.url
    )

    chunks = list(LangChainProvider(config).generate(make_request(config)))

    assert len(chunks) == 1 and "TARSY_TEST_NO_SUCH_KEY" in chunks[0].message and not chunks[0].retryable


def test_gemini_through_langchain_streams_thinking_and_replays_signatures(
    gemini_config, fake_gemini, fast_policy, monkeypatch
):
    config = gemini_config.model_copy(update={"llm_backend": "langchain"})
    fake_gemini.queue(
        {
            "parts": [
                {"text": "Inspecting events", "thought": True},
                function_call("kubernetes__pod_logs", {"pod": "db-0"}, signature="c2lnLWxj"),
            ],
            "usage": gemini_usage(10, 5, 7),
        }
    )
    request = make_request(config, tools=[LOGS_TOOL])
    first = LLMResponse.collect(LangChainProvider(config, retry_policy=fast_policy).generate(request))
    assert first.thinking == "Inspecting events"
    assert [c.name for c in first.tool_calls] == ["kubernetes.pod_logs"]
    assert (first.usage.output_tokens, first.usage.thinking_tokens) == (5, 7)
    call = first.tool_calls[0]
    history = [
        *request.messages,
        first.as_assistant_message(),
        ConversationMessage(role="tool", content="ready", tool_call_id=call.id, tool_name=call.name),
    ]
    restored = MESSAGES_ADAPTER.validate_json(MESSAGES_ADAPTER.dump_json(history))
    fake_gemini.queue({"parts": [{"text": "db-0 is fine."}]})

    second = list(
        LangChainProvider(config, retry_policy=fast_policy).generate(make_request(config, *restored, tools=[LOGS_TOOL]))
    )

    assert [c.text for c in second if isinstance(c, (TextChunk, ThinkingChunk))] == ["db-0 is fine."]
    model_turn = fake_gemini.requests[1].body["contents"][1]
    replayed = [p for p in model_turn["parts"] if "functionCall" in p]
    assert replayed == [
        {"functionCall": {"name": "kubernetes__pod_logs", "args": {"pod": "db-0"}}, "thoughtSignature": "c2lnLWxj"}
    ]
    assert fake_gemini.requests[0].headers["x-goog-api-key"] == "test-gemini-key"


def test_each_vendor_gets_a_langchain_model_with_our_base_url_and_no_sdk_retries():
    expectations = {
        "openai": ("ChatOpenAI", "http://gw.local/v1"),
        "xai": ("ChatOpenAI", "http://gw.local/v1"),
        "anthropic": ("ChatAnthropic", "http://gw.local/v1"),
        "google": ("ChatGoogleGenerativeAI", "http://gw.local/v1"),
    }
    for vendor, (cls_name, url) in expectations.items():
        config = LLMProviderConfig(type=vendor, model="some-model", base_url=url)
        model = build_chat_model(config, "key")
        assert type(model).__name__ == cls_name
        assert model.max_retries == 0
        base = getattr(model, "openai_api_base", None) or getattr(model, "anthropic_api_url", None) or model.base_url
        assert base == url
    xai_default = build_chat_model(LLMProviderConfig(type="xai", model="grok-4"), "key")
    assert xai_default.openai_api_base == XAI_BASE_URL
