"""Which provider class serves which provider type, strategy and override."""

from __future__ import annotations

import pytest

from agents.config.schema import LLMProviderConfig
from agents.llm import registry
from agents.llm.google_native import GoogleNativeProvider
from agents.llm.langchain_provider import LangChainProvider
from agents.llm.scripted import ScriptedProvider


def provider(kind: str, **fields) -> LLMProviderConfig:
    if kind == "scripted":
        return LLMProviderConfig(type="scripted", script=[{"text": "hi"}], **fields)
    if kind == "demo":
        return LLMProviderConfig(type="demo", **fields)
    return LLMProviderConfig(type=kind, model="some-model", **fields)


@pytest.fixture(autouse=True)
def empty_cache():
    registry.clear_cache()
    yield
    registry.clear_cache()


@pytest.mark.parametrize(
    ("kind", "strategy", "override", "fields", "expected"),
    [
        ("google", "react", "", {}, "langchain"),
        ("google", "synthesis", "", {}, "langchain"),
        ("google", "native-thinking", "", {}, "google-native"),
        ("vertexai", "synthesis-native-thinking", "", {}, "google-native"),
        ("openai", "native-thinking", "", {}, "langchain"),  # native thinking needs a Gemini model
        ("anthropic", "native-thinking", "google-native", {}, "langchain"),
        ("google", "native-thinking", "", {"llm_backend": "langchain"}, "langchain"),
        ("google", "react", "", {"llm_backend": "google-native"}, "google-native"),
        ("google", "react", "google-native", {"llm_backend": "langchain"}, "google-native"),
        ("scripted", "native-thinking", "langchain", {}, "scripted"),
        ("demo", "react", "google-native", {}, "demo"),
    ],
)
def test_backend_choice(kind, strategy, override, fields, expected):
    assert registry.backend_for(strategy, provider(kind, **fields), override) == expected


@pytest.mark.parametrize(
    ("kind", "strategy", "cls"),
    [
        ("google", "native-thinking", GoogleNativeProvider),
        ("google", "react", LangChainProvider),
        ("openai", "react", LangChainProvider),
        ("xai", "native-thinking", LangChainProvider),
        ("scripted", "react", ScriptedProvider),
    ],
)
def test_get_provider_builds_the_class_for_the_backend(kind, strategy, cls):
    config = provider(kind)

    built = registry.get_provider("p1", config, registry.backend_for(strategy, config))

    assert type(built) is cls
    assert built.name == "p1"


def test_providers_are_cached_per_config_and_backend():
    config = provider("google")

    native = registry.get_provider("g", config, "google-native")

    assert registry.get_provider("g", config, "google-native") is native
    assert registry.get_provider("g", config, "langchain") is not native
    assert registry.get_provider("g", provider("google", temperature=0.1), "google-native") is not native


def test_demo_backend_uses_the_demo_provider():
    demo = pytest.importorskip("agents.llm.demo")

    assert isinstance(registry.get_provider("demo", provider("demo"), "demo"), demo.DemoProvider)
