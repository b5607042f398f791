"""Fixtures for the masking, demo cluster and demo provider tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp import Client

from agents.config.schema import LLMProviderConfig, MaskingConfig
from agents.mcp.demo_cluster import build_server
from agents.mcp.masking import DataMasker


@pytest.fixture
def open_cluster() -> Callable[[], Client]:
    """Opens the demo cluster in-process through the real MCP client: `async with open_cluster() as cluster`.

    A factory, not a yielding fixture: anyio requires the client to be closed by the task that opened it,
    and pytest-asyncio finalises async fixtures in another task.
    """
    return lambda: Client(build_server())


@pytest.fixture
def demo_provider_config() -> LLMProviderConfig:
    return LLMProviderConfig(type="demo")


@pytest.fixture
def masker_for():
    def build(*groups: str, patterns: list[str] | None = None) -> DataMasker:
        return DataMasker.from_config(MaskingConfig(pattern_groups=list(groups), patterns=patterns or []))

    return build


@pytest.fixture
def demo_cluster_changes(monkeypatch, tmp_path):
    """The demo cluster's write journal in a folder of this test's own, empty before and after, so one test's
    scaled or patched objects never leak into the next."""
    from agents.mcp import demo_cluster_writes as writes

    monkeypatch.setenv(writes.STATE_ENV, str(tmp_path / "changes.json"))
    writes.reset()
    yield
    writes.reset()
