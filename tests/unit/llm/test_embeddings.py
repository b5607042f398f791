"""Embeddings through the real SDKs (google-genai, LangChain's OpenAIEmbeddings) against the fake servers."""

from __future__ import annotations

import pytest

from agents.config.schema import LLMProviderConfig
from agents.llm.embeddings import embed_texts
from agents.llm.retry import ProviderError
from agents.memory.ranking import cosine
from tests.fakes.embedding import fake_embedding
from tests.fakes.fake_gemini import start_fake_gemini
from tests.fakes.fake_openai import start_fake_openai

TEXTS = ["checkout crash loop: config map checkout-config missing", "checkout pods crashing, configmap missing",
         "disk full on node-3"]


@pytest.fixture(params=["google", "openai"])
def provider(request, monkeypatch):
    monkeypatch.setenv("FAKE_EMBED_KEY", "k")
    server = start_fake_gemini() if request.param == "google" else start_fake_openai()
    base = server.url if request.param == "google" else f"{server.url}/v1"
    yield server, LLMProviderConfig(type=request.param, model="fake-embed", base_url=base, api_key_env="FAKE_EMBED_KEY")
    server.stop()


def test_each_text_gets_its_vector_from_the_provider(provider):
    server, cfg = provider
    vectors = embed_texts("embedder", cfg, TEXTS, session_id="")
    assert [len(v) for v in vectors] == [256, 256, 256]
    assert vectors[0] == pytest.approx(fake_embedding(TEXTS[0]), abs=1e-6)  # float32 on the wire
    assert cosine(vectors[0], vectors[1]) > 0.3 > cosine(vectors[0], vectors[2])
    assert server.requests and "fake-embed" in server.requests[0].path + str(server.requests[0].body)


def test_an_unreachable_provider_is_a_provider_error(monkeypatch):
    monkeypatch.setenv("FAKE_EMBED_KEY", "k")
    cfg = LLMProviderConfig(type="openai", model="m", base_url="http://127.0.0.1:9/v1", api_key_env="FAKE_EMBED_KEY")
    with pytest.raises(ProviderError, match="embedding provider 'embedder' failed"):
        embed_texts("embedder", cfg, ["x"], session_id="")
    with pytest.raises(ProviderError, match="cannot embed"):
        embed_texts("embedder", LLMProviderConfig(type="anthropic", model="m"), ["x"], session_id="")
