"""Choose the provider implementation for a provider config and an iteration strategy."""

from __future__ import annotations

import threading

from agents.config.schema import LLMProviderConfig

from .base import Provider

# react & synthesis speak text and work with any model; native thinking needs Gemini's API.
_STRATEGY_BACKEND = {
    "react": "langchain",
    "synthesis": "langchain",
    "native-thinking": "google-native",
    "synthesis-native-thinking": "google-native",
}

_cache: dict[tuple[str, str], Provider] = {}
_lock = threading.Lock()


def backend_for(strategy: str, provider: LLMProviderConfig, override: str = "") -> str:
    """The backend an execution uses: explicit override > provider's `llm_backend` > strategy default."""
    if provider.type in ("demo", "scripted"):
        return provider.type
    backend = override or provider.llm_backend or _STRATEGY_BACKEND.get(strategy, "langchain")
    if backend == "google-native" and provider.type not in ("google", "vertexai"):
        # google-native needs a Gemini model; other vendors go through LangChain.
        return "langchain"
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


def get_provider(name: str, provider: LLMProviderConfig, backend: str) -> Provider:
    """Providers are cached per process (SDK clients keep connection pools)."""
    key = (f"{name}:{provider.model_dump_json()}", backend)
    with _lock:
        if key not in _cache:
            _cache[key] = _build(provider, backend, name)
        return _cache[key]


def clear_cache() -> None:
    with _lock:
        _cache.clear()
