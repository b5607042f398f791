"""Which provider class serves which provider type, strategy and override."""

from __future__ import annotations

import pytest

from agents.config.registry import TarsyConfig
from agents.config.schema import AgentConfig, DefaultsConfig, LLMProviderConfig, QueueConfig, SystemConfig
from agents.context import resolve_agent
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
    ("kind", "fields", "expected"),
    [
        ("google", {}, "google-native"),
        ("vertexai", {}, "google-native"),
        ("openai", {}, "langchain"),
        ("anthropic", {}, "langchain"),
        ("xai", {}, "langchain"),
        ("google", {"llm_backend": "langchain"}, "langchain"),
        ("openai", {"llm_backend": "google-native"}, "langchain"),  # google-native needs a Gemini model
        ("scripted", {"llm_backend": "langchain"}, "scripted"),
        ("demo", {"llm_backend": "google-native"}, "demo"),
    ],
)
def test_the_adapter_follows_the_provider_type(kind, fields, expected):
    assert registry.backend_for(provider(kind, **fields)) == expected


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("google", GoogleNativeProvider),
        ("openai", LangChainProvider),
        ("xai", LangChainProvider),
        ("scripted", ScriptedProvider),
    ],
)
def test_get_provider_builds_the_class_for_the_type(kind, cls):
    config = provider(kind)

    built = registry.get_provider("p1", config)

    assert type(built) is cls
    assert built.name == "p1"


@pytest.mark.parametrize("strategy", ["react", "native-thinking", "synthesis", "synthesis-native-thinking"])
def test_one_provider_config_gets_the_same_adapter_under_every_strategy(strategy):
    """The strategy never picks the adapter: a Gemini provider is served by google-genai under all of them."""
    config = TarsyConfig(defaults=DefaultsConfig(), queue=QueueConfig(), system=SystemConfig(),
                         llm_providers={"g": provider("google")}, mcp_servers={}, chains={}, default_provider="g",
                         agents={"A": AgentConfig(iteration_strategy=strategy)})

    resolved = resolve_agent(config, agent_name="A")

    assert resolved.llm_backend == "google-native"
    assert type(registry.get_provider("g", resolved.llm_provider)) is GoogleNativeProvider


def test_providers_are_cached_per_config():
    config = provider("google")

    native = registry.get_provider("g", config)

    assert registry.get_provider("g", config) is native
    assert registry.get_provider("g", provider("google", temperature=0.1)) is not native
    assert registry.get_provider("g", provider("google", llm_backend="langchain")) is not native


def test_demo_backend_uses_the_demo_provider():
    demo = pytest.importorskip("agents.llm.demo")

    assert isinstance(registry.get_provider("demo", provider("demo")), demo.DemoProvider)
