"""Fixtures for the LLM provider tests: wire-level fake servers and fast retry policies."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from agents.config.schema import LLMProviderConfig
from agents.llm.google_native import GoogleNativeProvider
from agents.llm.langchain_provider import LangChainProvider
from agents.llm.retry import RetryPolicy
from agents.llm.types import ConversationMessage, LLMRequest
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_openai import FakeOpenAI

GEMINI_KEY_ENV = "TARSY_TEST_GEMINI_KEY"
OPENAI_KEY_ENV = "TARSY_TEST_OPENAI_KEY"
REQUEST_BUDGET_S = 15.0  # every request in these tests has a deadline, so nothing can hang the suite


@pytest.fixture
def fast_policy() -> RetryPolicy:
    return RetryPolicy(backoff_base_s=0.01, empty_delay_s=0.01, min_attempt_s=0.05)


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    server = FakeGemini()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def gemini_config(fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> LLMProviderConfig:
    monkeypatch.setenv(GEMINI_KEY_ENV, "test-gemini-key")
    return LLMProviderConfig(
        type="google", model="gemini-2.5-pro", api_key_env=GEMINI_KEY_ENV, base_url=fake_gemini.url
    )


@pytest.fixture
def gemini(gemini_config: LLMProviderConfig, fast_policy: RetryPolicy) -> GoogleNativeProvider:
    return GoogleNativeProvider(gemini_config, name="gemini-test", retry_policy=fast_policy)


@pytest.fixture
def openai_config(fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> LLMProviderConfig:
    monkeypatch.setenv(OPENAI_KEY_ENV, "test-openai-key")
    return LLMProviderConfig(
        type="openai", model="gpt-test", api_key_env=OPENAI_KEY_ENV, base_url=f"{fake_openai.url}/v1"
    )


@pytest.fixture
def openai(openai_config: LLMProviderConfig, fast_policy: RetryPolicy) -> LangChainProvider:
    return LangChainProvider(openai_config, name="openai-test", retry_policy=fast_policy)


def make_request(provider: LLMProviderConfig, *messages: ConversationMessage, **fields: Any) -> LLMRequest:
    """A request with a system + user prompt unless messages are given, and a deadline."""
    if not messages:
        messages = (
            ConversationMessage(role="system", content="You are an SRE."),
            ConversationMessage(role="user", content="Why is the pod crashing?"),
        )
    fields.setdefault("deadline", time.time() + REQUEST_BUDGET_S)
    return LLMRequest(messages=list(messages), provider=provider, **fields)
