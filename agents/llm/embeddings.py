"""Embedding vectors for investigation memory, through the provider SDKs' own embedding APIs.

`google`: google-genai `models.embed_content`; `openai`: LangChain's `OpenAIEmbeddings` (the OpenAI embeddings
endpoint, or any compatible server at `base_url`). SDK types and exceptions stay in this module: callers get
lists of floats or a `ProviderError`. The provider's `model` names the embedding model. Clients are kept per
(model, key, address): building one loads the CA bundle (~100 ms), more than the request it would make.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from agents.config.schema import LLMProviderConfig
from agents.privacy.policy import applies, session_pseudonyms

from .langchain_provider import DEFAULT_API_KEY_ENV, SELF_HOSTED_API_KEY
from .retry import ProviderError

EMBED_TIMEOUT_S = 30.0  # an embedding is a small request: a slow one must not hold a first prompt long
EMBED_BATCH = 100  # texts per request (the Gemini API's limit)


def _api_key(name: str, cfg: LLMProviderConfig) -> str:
    if cfg.self_hosted:
        return SELF_HOSTED_API_KEY
    env = cfg.api_key_env or DEFAULT_API_KEY_ENV.get(cfg.type, "")
    key = os.environ.get(env, "") if env else ""
    if not key:
        raise ProviderError(f"API key environment variable {env} is not set for embedding provider {name!r}",
                            "missing_api_key")
    return key


def embed_texts(name: str, cfg: LLMProviderConfig, texts: list[str], *, session_id: str) -> list[list[float]]:
    """One vector per text, in order; a ProviderError when the provider cannot give them. A provider that
    pseudonymises embeds the texts with the identifiers of `session_id` replaced by their kind (`<pod>`): the same
    in every session, so memories of one session still match queries of another."""
    if not texts:
        return []
    if applies(cfg):
        pseudonyms = session_pseudonyms(session_id, texts)
        texts = [pseudonyms.redact(t) for t in texts]
    try:
        if cfg.type == "google":
            return _google(name, cfg, texts)
        if cfg.type == "openai":
            return _openai(name, cfg, texts)
    except ProviderError:
        raise
    except Exception as exc:  # any SDK or transport failure becomes ours
        raise ProviderError(f"embedding provider {name!r} failed: {type(exc).__name__}: {exc}", "embedding_error",
                            retryable=True) from exc
    raise ProviderError(f"provider type {cfg.type!r} cannot embed (google or openai)", "bad_config")


CLIENTS_KEPT = 8  # distinct embedding providers a deployment configures: one or two


@functools.lru_cache(maxsize=CLIENTS_KEPT)
def _google_client(api_key: str, base_url: str) -> Any:
    from google import genai
    from google.genai import types

    http: dict[str, Any] = {"timeout": int(EMBED_TIMEOUT_S * 1000)}
    if base_url:
        http["base_url"] = base_url
    return genai.Client(api_key=api_key, http_options=types.HttpOptions(**http))


def _google(name: str, cfg: LLMProviderConfig, texts: list[str]) -> list[list[float]]:
    client = _google_client(_api_key(name, cfg), cfg.base_url)
    vectors: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        result = client.models.embed_content(model=cfg.model, contents=texts[start:start + EMBED_BATCH])
        vectors.extend(list(e.values or []) for e in result.embeddings or [])
    return _checked(name, vectors, len(texts))


@functools.lru_cache(maxsize=CLIENTS_KEPT)
def _openai_client(model: str, api_key: str, base_url: str) -> Any:
    from langchain_openai import OpenAIEmbeddings
    from pydantic import SecretStr

    # check_embedding_ctx_length off: it would tokenise with tiktoken, which downloads its tables on first use.
    return OpenAIEmbeddings(model=model, openai_api_key=SecretStr(api_key), openai_api_base=base_url or None,
                            max_retries=0, request_timeout=EMBED_TIMEOUT_S, check_embedding_ctx_length=False,
                            chunk_size=EMBED_BATCH)


def _openai(name: str, cfg: LLMProviderConfig, texts: list[str]) -> list[list[float]]:
    client = _openai_client(cfg.model, _api_key(name, cfg), cfg.base_url)
    return _checked(name, client.embed_documents(texts), len(texts))


def _checked(name: str, vectors: list[list[float]], count: int) -> list[list[float]]:
    if len(vectors) != count or any(not v for v in vectors):
        raise ProviderError(f"embedding provider {name!r} returned {len(vectors)} vectors for {count} texts",
                            "embedding_error")
    return [[float(x) for x in v] for v in vectors]
