"""Shared fixtures for the pure agent-runtime tests: tool lists and resolved agent configs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.config.schema import LLMProviderConfig
from agents.context import ResolvedAgentConfig
from agents.llm.types import ToolDefinition


def make_tools() -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="kubernetes-server.pods_list",
            description="List pods in a namespace.",
            parameters={
                "type": "object",
                "properties": {"namespace": {"type": "string", "description": "Namespace to list."}},
                "required": ["namespace"],
            },
        ),
        ToolDefinition(name="kubernetes-server.namespaces_list", description="List all namespaces."),
        ToolDefinition(
            name="kubernetes-server.pods_log",
            description="Fetch a pod's logs.",
            parameters={
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Pod name."},
                    "namespace": {"type": "string"},
                    "tail": {"type": "integer", "description": "Lines from the end.", "default": 100},
                },
                "required": ["name", "namespace"],
            },
        ),
        ToolDefinition(
            name="prometheus.query",
            description="Run a PromQL query.",
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string"}, "range": {"type": "string", "enum": ["5m", "1h"]}},
                "required": ["query"],
            },
        ),
    ]


@pytest.fixture
def tools() -> list[ToolDefinition]:
    return make_tools()


@pytest.fixture
def agent_config() -> ResolvedAgentConfig:
    """An agent with two MCP servers, each with its own instructions, plus custom instructions."""
    return ResolvedAgentConfig(
        agent_name="KubernetesAgent",
        iteration_strategy="react",
        llm_provider_name="demo",
        llm_provider=LLMProviderConfig(type="demo"),
        llm_backend="langchain",
        max_iterations=20,
        iteration_timeout=120.0,
        mcp_servers=("kubernetes-server", "prometheus"),
        custom_instructions="Focus on the namespace named in the alert before looking cluster-wide.",
        server_instructions=(
            ("kubernetes-server", "Read-only access to the cluster. Prefer pods_list before pods_log."),
            ("prometheus", "Query ranges of at most one hour."),
        ),
    )


SNAPSHOT_DIR = Path(__file__).with_name("snapshots")


@pytest.fixture
def snapshot():
    """Compare text with snapshots/<name>.txt; UPDATE_SNAPSHOTS=1 (re)writes it, otherwise a mismatch fails."""

    def check(name: str, text: str) -> None:
        path = SNAPSHOT_DIR / f"{name}.txt"
        updating = os.environ.get("UPDATE_SNAPSHOTS") == "1"
        if updating and (not path.exists() or path.read_text(encoding="utf-8") != text):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"snapshot {path} is missing; run with UPDATE_SNAPSHOTS=1 to create it"
        assert text == path.read_text(encoding="utf-8"), f"prompt differs from {path}; UPDATE_SNAPSHOTS=1 to accept"

    return check
