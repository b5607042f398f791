"""Provider error text (an API's error body) is masked before it is recorded, raised on or logged."""

from __future__ import annotations

import logging
import time

import pytest

from agents.config.schema import LLMProviderConfig
from agents.llm.langchain_provider import LangChainProvider
from agents.llm.recorded import LLMTarget
from agents.llm.retry import RetryPolicy
from agents.llm.types import ConversationMessage, LLMRequest, LLMResponse, ToolCall
from agents.mcp.executor import MCPToolExecutor
from agents.mcp.pool import MCPPool
from agents.mcp.summarizer import ResultSummarizer
from tests.fakes.fake_openai import FakeOpenAI
from tests.unit.mcp.conftest import PROVIDER, InMemoryRecorder, ScriptedLLM, resolved_for, stdio_config, tarsy_config

pytestmark = pytest.mark.timeout(60)

PASSWORD = "hunter2xyz"
TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"
ERROR_BODY = f"quota exhausted for key token: {TOKEN} (password={PASSWORD})"


def test_a_failed_summary_keeps_the_providers_error_only_masked():
    recorder, pool = InMemoryRecorder(), MCPPool()
    summarizer = ResultSummarizer(target=LLMTarget(name="test", config=PROVIDER, adapter=ScriptedLLM(error=ERROR_BODY)),
                                  recorder=recorder, investigation_so_far=lambda: "")
    servers = {"tools": stdio_config(summarization={"size_threshold_tokens": 500, "summary_max_token_limit": 100})}
    executor = MCPToolExecutor(config=tarsy_config(servers), resolved=resolved_for(["tools"]), recorder=recorder,
                               pool=pool, summarizer=summarizer)
    try:
        result = executor.execute(ToolCall(id="call-1", name="tools.big_output", arguments={"n": 8000}))
    finally:
        pool.shutdown()

    assert not result.summarized
    (interaction,) = recorder.llm
    (error,) = recorder.of_type("error")
    for text in (interaction.error_message, error.content):
        assert "quota exhausted" in text and "__MASKED_" in text
        assert TOKEN not in text and PASSWORD not in text


def test_a_retried_provider_error_is_logged_masked(monkeypatch, caplog):
    fake = FakeOpenAI().start()
    monkeypatch.setenv("TARSY_TEST_OPENAI_KEY", "test-key")
    config = LLMProviderConfig(type="openai", model="gpt-test", api_key_env="TARSY_TEST_OPENAI_KEY",
                               base_url=f"{fake.url}/v1")
    provider = LangChainProvider(config, name="openai-test",
                                 retry_policy=RetryPolicy(backoff_base_s=0.01, min_attempt_s=0.05))
    fake.queue({"status": 429, "message": ERROR_BODY}, {"text": "The pod is fine."})
    request = LLMRequest(messages=[ConversationMessage(role="user", content="Why?")], provider=config,
                         deadline=time.time() + 15)
    try:
        with caplog.at_level(logging.WARNING, logger="agents.llm.retry"):
            response = LLMResponse.collect(provider.generate(request))
    finally:
        fake.stop()

    assert response.text == "The pod is fine."
    (retried,) = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert "quota exhausted" in retried and TOKEN not in retried and PASSWORD not in retried
