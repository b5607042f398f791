"""GoogleNativeProvider: the real google-genai SDK against the fake Gemini server."""

from __future__ import annotations

import logging
import time

import pytest

from agents.config.schema import LLMProviderConfig, NativeTools
from agents.llm.google_native import GoogleNativeProvider
from agents.llm.retry import RetryPolicy
from agents.llm.types import (
    MESSAGES_ADAPTER,
    CodeExecutionChunk,
    ConversationMessage,
    ErrorChunk,
    GroundingChunk,
    LLMResponse,
    ProviderStateChunk,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolDefinition,
    UsageChunk,
)
from tests.fakes.fake_gemini import error, function_call, text, usage

from .conftest import make_request

POD_TOOL = ToolDefinition(
    name="kubernetes.get_pods",
    description="List pods",
    parameters={"type": "object", "properties": {"namespace": {"type": "string"}}},
)


def test_text_and_thinking_stream_as_separate_chunks(gemini, gemini_config, fake_gemini):
    fake_gemini.queue(
        {"parts": [{"text": "Checking the logs", "thought": True}, {"text": "The pod "}, {"text": "is OOMKilled."}]}
    )

    chunks = list(gemini.generate(make_request(gemini_config)))

    visible = [c for c in chunks if isinstance(c, (TextChunk, ThinkingChunk))]
    assert visible == [
        ThinkingChunk(text="Checking the logs"),
        TextChunk(text="The pod "),
        TextChunk(text="is OOMKilled."),
    ]
    assert fake_gemini.requests[0].path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert fake_gemini.requests[0].headers["x-goog-api-key"] == "test-gemini-key"


def test_system_messages_become_system_instruction_and_max_tokens_is_sent(gemini, gemini_config, fake_gemini):
    fake_gemini.queue(text("ok"))

    list(gemini.generate(make_request(gemini_config, max_output_tokens=321)))

    body = fake_gemini.requests[0].body
    assert body["systemInstruction"]["parts"] == [{"text": "You are an SRE."}]
    assert [c["role"] for c in body["contents"]] == ["user"]
    assert body["generationConfig"]["maxOutputTokens"] == 321


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gemini-2.5-pro", {"include_thoughts": True, "thinking_budget": 32768}),
        ("gemini-2.5-flash", {"include_thoughts": True, "thinking_budget": 24576}),
        ("gemini-3-pro-preview", {"include_thoughts": True, "thinking_level": "HIGH"}),
        ("gemini-2.0-something", {"include_thoughts": True, "thinking_budget": 24576}),
    ],
)
def test_thinking_config_depends_on_the_model(gemini_config, fake_gemini, fast_policy, model, expected):
    config = gemini_config.model_copy(update={"model": model})
    fake_gemini.queue(text("ok"))

    list(GoogleNativeProvider(config, retry_policy=fast_policy).generate(make_request(config)))

    assert fake_gemini.requests[0].body["generationConfig"]["thinkingConfig"] == expected


def test_function_call_comes_back_with_its_canonical_name(gemini, gemini_config, fake_gemini):
    fake_gemini.queue({"parts": [function_call("kubernetes__get_pods", {"namespace": "prod"}, signature="c2ln")]})

    chunks = list(gemini.generate(make_request(gemini_config, tools=[POD_TOOL])))

    calls = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    assert [(c.name, c.arguments) for c in calls] == [("kubernetes.get_pods", {"namespace": "prod"})]
    declaration = fake_gemini.requests[0].body["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "kubernetes__get_pods"
    assert declaration["parameters_json_schema"] == POD_TOOL.parameters


def test_tool_results_and_thought_signatures_are_replayed_on_the_next_request(gemini_config, fake_gemini, fast_policy):
    first = GoogleNativeProvider(gemini_config, retry_policy=fast_policy)
    fake_gemini.queue(
        {
            "parts": [
                {"text": "Let me look.", "thought": True},
                function_call("kubernetes__get_pods", {"namespace": "prod"}, signature="c2lnbmF0dXJlLTE="),
                function_call("kubernetes__get_pods", {"namespace": "dev"}),
            ]
        }
    )
    request = make_request(gemini_config, tools=[POD_TOOL])
    reply = LLMResponse.collect(first.generate(request))
    assert reply.provider_state is not None
    first_call, second_call = reply.tool_calls
    conversation = [
        *request.messages,
        reply.as_assistant_message(),
        ConversationMessage(
            role="tool", content="pod-a Running", tool_call_id=first_call.id, tool_name=first_call.name
        ),
        ConversationMessage(
            role="tool", content="pod-b Pending", tool_call_id=second_call.id, tool_name=second_call.name
        ),
    ]
    # Stored as JSON and read back by a fresh provider, as another worker process would.
    restored = MESSAGES_ADAPTER.validate_json(MESSAGES_ADAPTER.dump_json(conversation))
    fake_gemini.queue(text("pod-b is pending on a full node."))

    second = GoogleNativeProvider(gemini_config, retry_policy=fast_policy)
    answer = LLMResponse.collect(second.generate(make_request(gemini_config, *restored, tools=[POD_TOOL])))

    assert answer.text == "pod-b is pending on a full node."
    contents = fake_gemini.requests[1].body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"] == [
        {
            "functionCall": {"name": "kubernetes__get_pods", "args": {"namespace": "prod"}},
            "thoughtSignature": "c2lnbmF0dXJlLTE=",
        },
        {"functionCall": {"name": "kubernetes__get_pods", "args": {"namespace": "dev"}}},
    ]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "kubernetes__get_pods", "response": {"output": "pod-a Running"}}},
        {"functionResponse": {"name": "kubernetes__get_pods", "response": {"output": "pod-b Pending"}}},
    ]


def test_text_signature_is_returned_as_provider_state(gemini, gemini_config, fake_gemini):
    fake_gemini.queue({"parts": [{"text": "Done."}, {"text": "", "thoughtSignature": "dGV4dC1zaWc="}]})

    chunks = list(gemini.generate(make_request(gemini_config)))

    states = [c.state for c in chunks if isinstance(c, ProviderStateChunk)]
    assert states == [{"google": {"text_signature": "dGV4dC1zaWc="}}]


def test_usage_is_reported_once_with_thinking_tokens(gemini, gemini_config, fake_gemini):
    fake_gemini.queue({"parts": [{"text": "a"}, {"text": "b"}], "usage": usage(120, 30, 45, cached=100)})

    chunks = list(gemini.generate(make_request(gemini_config)))

    assert [c for c in chunks if isinstance(c, UsageChunk)] == [
        UsageChunk(input_tokens=120, output_tokens=30, thinking_tokens=45, total_tokens=195, cached_tokens=100)
    ]


def test_rate_limit_is_retried_until_an_answer_arrives(gemini, gemini_config, fake_gemini):
    fake_gemini.queue(error(429), error(429), text("finally"))

    response = LLMResponse.collect(gemini.generate(make_request(gemini_config)))

    assert response.error is None
    assert response.text == "finally"
    assert len(fake_gemini.requests) == 3


def test_rate_limit_gives_up_after_three_retries(gemini, gemini_config, fake_gemini):
    fake_gemini.queue(*[error(429)] * 5)

    chunks = list(gemini.generate(make_request(gemini_config)))

    assert len(fake_gemini.requests) == 4
    assert isinstance(chunks[-1], ErrorChunk)
    assert (chunks[-1].code, chunks[-1].retryable) == ("rate_limit", True)


def test_server_error_is_retried_twice_then_ends_as_a_retryable_error(gemini, gemini_config, fake_gemini):
    fake_gemini.queue(*[error(500, "backend exploded")] * 5)

    chunks = list(gemini.generate(make_request(gemini_config)))

    assert len(fake_gemini.requests) == 3  # the first attempt and two retries with backoff
    assert len(chunks) == 1 and isinstance(chunks[0], ErrorChunk)
    assert (chunks[0].code, chunks[0].retryable) == ("server_error", True)
    assert "backend exploded" in chunks[0].message


@pytest.mark.parametrize(("status", "code"), [(400, "bad_request"), (403, "auth"), (404, "not_found")])
def test_client_errors_are_not_retryable(gemini, gemini_config, fake_gemini, status, code):
    fake_gemini.queue(error(status), text("never reached"))

    chunks = list(gemini.generate(make_request(gemini_config)))

    assert chunks == [ErrorChunk(message=chunks[0].message, code=code, retryable=False)]
    assert len(fake_gemini.requests) == 1


def test_empty_response_is_retried(gemini, gemini_config, fake_gemini):
    fake_gemini.queue({"parts": [], "usage": usage(50, 0)}, text("second time lucky", usage=usage(50, 5)))

    chunks = list(gemini.generate(make_request(gemini_config)))

    response = LLMResponse.collect(chunks)
    assert response.text == "second time lucky"
    assert response.error is None
    assert response.usage.input_tokens == 100  # the empty attempt was paid for too
    assert len(fake_gemini.requests) == 2


def test_persistently_empty_response_ends_as_error(gemini, gemini_config, fake_gemini):
    fake_gemini.queue(*[{"parts": []}] * 5)

    chunks = list(gemini.generate(make_request(gemini_config)))

    assert (chunks[-1].code, chunks[-1].retryable) == ("empty_response", True)
    assert len(fake_gemini.requests) == 4


def test_failure_after_visible_output_is_not_retried(gemini, gemini_config, fake_gemini):
    partial = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Half an answer"}]}}]}
    failure = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
    fake_gemini.queue({"events": [partial, failure]}, text("must not be requested"))

    chunks = list(gemini.generate(make_request(gemini_config)))

    assert chunks[0] == TextChunk(text="Half an answer")
    assert isinstance(chunks[-1], ErrorChunk) and chunks[-1].code == "rate_limit"
    assert len(fake_gemini.requests) == 1


def test_stalled_stream_is_aborted_at_the_deadline(gemini, gemini_config, fake_gemini):
    fake_gemini.queue({"parts": [{"text": "Starting"}, {"text": "never sent"}], "stall_after": 1})
    started = time.monotonic()

    chunks = list(gemini.generate(make_request(gemini_config, deadline=time.time() + 0.8)))

    elapsed = time.monotonic() - started
    assert chunks[0] == TextChunk(text="Starting")
    assert chunks[-1] == ErrorChunk(message=chunks[-1].message, code="deadline_exceeded", retryable=True)
    assert 0.7 < elapsed < 2.0


def test_retry_is_not_started_when_it_cannot_finish_before_the_deadline(gemini_config, fake_gemini):
    slow = GoogleNativeProvider(gemini_config, retry_policy=RetryPolicy(backoff_base_s=5.0))
    fake_gemini.queue(error(429), text("too late"))
    started = time.monotonic()

    chunks = list(slow.generate(make_request(gemini_config, deadline=time.time() + 2.0)))

    assert time.monotonic() - started < 1.5
    assert (chunks[-1].code, chunks[-1].retryable) == ("rate_limit", True)
    assert len(fake_gemini.requests) == 1


def test_missing_api_key_names_the_environment_variable(fake_gemini, monkeypatch):
    monkeypatch.delenv("TARSY_TEST_ABSENT_KEY", raising=False)
    config = LLMProviderConfig(
        type="google", model="gemini-2.5-pro", api_key_env="TARSY_TEST_ABSENT_KEY", base_url=fake_gemini.url
    )

    chunks = list(GoogleNativeProvider(config).generate(make_request(config)))

    assert len(chunks) == 1 and isinstance(chunks[0], ErrorChunk)
    assert "TARSY_TEST_ABSENT_KEY" in chunks[0].message and not chunks[0].retryable
    assert fake_gemini.requests == []


def test_native_tools_merge_provider_and_request_settings(gemini_config, fake_gemini, fast_policy):
    config = gemini_config.model_copy(update={"native_tools": NativeTools(google_search=True, url_context=True)})
    fake_gemini.queue(text("ok"))
    request = make_request(config, native_tools=NativeTools(url_context=False, code_execution=True))

    list(GoogleNativeProvider(config, retry_policy=fast_policy).generate(request))

    assert fake_gemini.requests[0].body["tools"] == [{"googleSearch": {}}, {"codeExecution": {}}]


def test_native_tools_are_suppressed_when_mcp_tools_are_present(gemini_config, fake_gemini, fast_policy, caplog):
    config = gemini_config.model_copy(update={"native_tools": NativeTools(google_search=True)})
    fake_gemini.queue(text("ok"))

    with caplog.at_level(logging.WARNING, logger="agents.llm.google_native"):
        list(GoogleNativeProvider(config, retry_policy=fast_policy).generate(make_request(config, tools=[POD_TOOL])))

    tools = fake_gemini.requests[0].body["tools"]
    assert len(tools) == 1 and "functionDeclarations" in tools[0]
    assert "native tools google_search suppressed" in caplog.text


def test_grounding_and_code_execution_become_their_own_chunks(gemini, gemini_config, fake_gemini):
    fake_gemini.queue(
        {
            "parts": [
                {"executableCode": {"language": "PYTHON", "code": "print(6 * 7)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}},
                {"text": "The answer is 42."},
            ],
            "grounding": {
                "webSearchQueries": ["kubernetes oomkilled"],
                "groundingChunks": [{"web": {"uri": "https://kubernetes.io/docs", "title": "Kubernetes docs"}}],
            },
            "url_context": {"urlMetadata": [{"retrievedUrl": "https://example.com/runbook"}]},
        }
    )

    chunks = list(gemini.generate(make_request(gemini_config)))

    assert [c for c in chunks if isinstance(c, CodeExecutionChunk)] == [
        CodeExecutionChunk(code="print(6 * 7)"),
        CodeExecutionChunk(result="42\n", outcome="OUTCOME_OK"),
    ]
    search, urls = [c for c in chunks if isinstance(c, GroundingChunk)]
    assert search.kind == "google_search" and search.queries == ["kubernetes oomkilled"]
    assert [(s.uri, s.title) for s in search.sources] == [("https://kubernetes.io/docs", "Kubernetes docs")]
    assert urls.kind == "url_context" and [s.uri for s in urls.sources] == ["https://example.com/runbook"]
