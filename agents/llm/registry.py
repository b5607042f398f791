"""Choose the adapter for a provider config: by the provider's type, never by the iteration strategy.

One provider config therefore behaves the same under every strategy: a Gemini provider
speaks through google-genai (thinking, thought signatures, native tools) whether the agent
runs ReAct or native thinking; every other vendor goes through LangChain.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from agents.config.schema import LLMProviderConfig

from .base import Provider

# Gemini's own SDK wherever the model is Gemini; LangChain for every other vendor.
_TYPE_ADAPTER = {"google": "google-native", "vertexai": "google-native", "demo": "demo", "scripted": "scripted"}

_cache: dict[tuple[str, str], Provider] = {}
_lock = threading.Lock()


def backend_for(provider: LLMProviderConfig) -> str:
    """The adapter a provider uses: its `llm_backend` override, else the one its type implies."""
    if provider.type in ("demo", "scripted"):
        return provider.type
    backend = provider.llm_backend or _TYPE_ADAPTER.get(provider.type, "langchain")
    if backend == "google-native" and provider.type not in ("google", "vertexai"):
        return "langchain"  # google-native needs a Gemini model
    return backend


def _build(provider: LLMProviderConfig, backend: str, name: str) -> Provider:
    if backend == "demo":
        from .demo import DemoProvider

        return DemoProvider()
    if backend == "scripted":
        from .scripted import ScriptedProvider

        return ScriptedProvider(provider, name=name)
    if backend == "google-native":
        from .google_native import GoogleNativeProvider

        return GoogleNativeProvider(provider, name=name)
    from .langchain_provider import LangChainProvider

    return LangChainProvider(provider, name=name)


def get_provider(name: str, provider: LLMProviderConfig) -> Provider:
    """The adapter for a provider config, cached per process (SDK clients keep connection pools)."""
    backend = backend_for(provider)
    key = (f"{name}:{provider.model_dump_json()}", backend)
    with _lock:
        if key not in _cache:
            _cache[key] = _build(provider, backend, name)
        return _cache[key]


def clear_cache() -> None:
    with _lock:
        _cache.clear()


@dataclass(frozen=True)
class LLMTarget:
    """A provider that can answer a call: its configured name, its config and the adapter serving it."""

    name: str
    config: LLMProviderConfig
    adapter: Provider

    @classmethod
    def of(cls, name: str, config: LLMProviderConfig) -> LLMTarget:
        return cls(name=name, config=config, adapter=get_provider(name, config))

    @property
    def family(self) -> str:
        """Provider state (e.g. Gemini thought signatures) can be replayed only within one family."""
        return f"{backend_for(self.config)}:{self.config.type}"
