"""Fixtures for the MCP client tests: real MCP test servers (stdio, streamable HTTP, SSE), an in-memory
recorder, configs, and a scripted LLM provider standing in for the outside world."""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agents.config.registry import TarsyConfig
from agents.config.schema import (
    AgentConfig,
    ChainConfig,
    DefaultsConfig,
    LLMProviderConfig,
    MCPServerConfig,
    QueueConfig,
    SystemConfig,
)
from agents.context import LLMInteractionRecord, MCPInteractionRecord, ResolvedAgentConfig
from agents.llm.types import ConversationMessage, ErrorChunk, LLMRequest, TextChunk, UsageChunk
from agents.mcp import health
from agents.mcp.pool import MCPPool

SERVER_SCRIPT = str(Path(__file__).parents[2] / "fakes" / "mcp_servers" / "tools_server.py")
SERVER_READY_TIMEOUT_S = 20.0  # python + mcp import takes ~2 s here; 10x margin for a loaded CI box
_names = itertools.count()


def stdio_config(**overrides: Any) -> MCPServerConfig:
    transport = {"type": "stdio", "command": sys.executable, "args": [SERVER_SCRIPT, "stdio"]}
    transport.update(overrides.pop("transport", {}))
    return MCPServerConfig(transport=transport, **overrides)


def unique_name(prefix: str = "srv") -> str:
    """A fresh server name gives a test its own server process inside a shared pool."""
    return f"{prefix}{next(_names)}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


# ---- recorder ---------------------------------------------------------------------------------


@dataclass
class Event:
    id: int
    type: str
    content: str
    metadata: dict[str, Any]
    status: str


@dataclass
class InMemoryRecorder:
    """Keeps every write in lists, in order, so tests can assert what a user would see."""

    events: list[Event] = field(default_factory=list)
    mcp: list[MCPInteractionRecord] = field(default_factory=list)
    llm: list[LLMInteractionRecord] = field(default_factory=list)
    started: list[str] = field(default_factory=list)  # interaction types of the calls begun
    messages: list[ConversationMessage] = field(default_factory=list)
    evidence_count: int = 0

    def conversation(self) -> list[ConversationMessage]:
        return list(self.messages)

    def add_messages(self, messages: list[ConversationMessage]) -> None:
        self.messages.extend(messages)

    def start_event(self, event_type: str, metadata: dict[str, Any] | None = None, content: str = "") -> int:
        self.events.append(Event(len(self.events) + 1, event_type, content, dict(metadata or {}), "started"))
        return len(self.events)

    def stream_open(self, event_type: str, metadata: dict[str, Any] | None = None) -> int:
        return self.start_event(event_type, metadata)

    def stream_event(self, event_id: int, delta: str, kind: str = "text") -> None:
        self.events[event_id - 1].content += delta

    def complete_event(self, event_id: int, content: str, status: str = "completed",
                       metadata: dict[str, Any] | None = None) -> None:
        event = self.events[event_id - 1]
        event.content, event.status = content, status
        event.metadata.update(metadata or {})

    def add_event(self, event_type: str, content: str, metadata: dict[str, Any] | None = None,
                  status: str = "completed") -> int:
        self.events.append(Event(len(self.events) + 1, event_type, content, dict(metadata or {}), status))
        return len(self.events)

    def llm_call_started(self, interaction_type: str, provider: str, model: str) -> None:
        self.started.append(interaction_type)

    def record_llm_interaction(self, record: LLMInteractionRecord) -> None:
        self.llm.append(record)

    def flush(self) -> None:
        """Every write above is visible at once."""

    def record_mcp_interaction(self, record: MCPInteractionRecord) -> None:
        self.mcp.append(record)

    def stop_reason(self) -> str | None:
        return None

    def evidence_id(self) -> str:
        self.evidence_count += 1
        return f"E{self.evidence_count}"

    def of_type(self, event_type: str) -> list[Event]:
        return [e for e in self.events if e.type == event_type]


@pytest.fixture
def recorder() -> InMemoryRecorder:
    return InMemoryRecorder()


# ---- scripted LLM (the outside world) --------------------------------------------------------------


class ScriptedLLM:
    """Answers every request with fixed chunks and remembers the requests it got."""

    name = "scripted-test"

    def __init__(self, text: str = "", error: str = "") -> None:
        self.text, self.error = text, error
        self.requests: list[LLMRequest] = []

    def generate(self, request: LLMRequest) -> Iterator[Any]:
        self.requests.append(request)
        if self.error:
            yield ErrorChunk(message=self.error, retryable=False)
            return
        for piece in (self.text[: len(self.text) // 2], self.text[len(self.text) // 2:]):
            yield TextChunk(text=piece)
        yield UsageChunk(input_tokens=100, output_tokens=20, total_tokens=120)


# ---- configs ------------------------------------------------------------------------------------


PROVIDER = LLMProviderConfig(type="openai", model="test-model", max_tool_result_tokens=2000)


def tarsy_config(servers: dict[str, MCPServerConfig], *, used: list[str] | None = None) -> TarsyConfig:
    """A config whose one chain's agent uses `used` of the servers (default: all of them)."""
    agent = AgentConfig(mcp_servers=list(servers) if used is None else used)
    chain = ChainConfig(alert_types=["test"], stages=[{"name": "analysis", "agents": [{"name": "TestAgent"}]}])
    return TarsyConfig(defaults=DefaultsConfig(), queue=QueueConfig(), system=SystemConfig(),
                       llm_providers={"test": PROVIDER}, mcp_servers=servers, agents={"TestAgent": agent},
                       chains={"test": chain}, default_provider="test")


def resolved_for(servers: list[str], tool_filter: dict[str, tuple[str, ...]] | None = None) -> ResolvedAgentConfig:
    return ResolvedAgentConfig(agent_name="TestAgent", iteration_strategy="react", llm_provider_name="test",
                               llm_provider=PROVIDER, llm_backend="langchain", max_iterations=5,
                               iteration_timeout=60.0, mcp_servers=tuple(servers), tool_filter=tool_filter or {})


# ---- pools and servers --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def shared_pool() -> Iterator[MCPPool]:
    """One pool for the whole run, like a worker process; tests that break servers use their own names."""
    pool = MCPPool()
    yield pool
    pool.shutdown()


@pytest.fixture
def pool() -> Iterator[MCPPool]:
    """A private pool, for tests about start-up and shutdown."""
    pool = MCPPool()
    yield pool
    pool.shutdown()


@pytest.fixture(autouse=True)
def _fresh_health_cache() -> Iterator[None]:
    health.clear_cache()
    yield
    health.clear_cache()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_network_server(transport: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, SERVER_SCRIPT, transport, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + SERVER_READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{transport} test server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{transport} test server did not listen within {SERVER_READY_TIMEOUT_S}s")


@pytest.fixture(scope="session")
def http_server() -> Iterator[str]:
    """URL of a streamable-HTTP test server (its own process on a free loopback port)."""
    proc, port = _start_network_server("http")
    yield f"http://127.0.0.1:{port}/mcp"
    proc.kill()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def sse_server() -> Iterator[str]:
    proc, port = _start_network_server("sse")
    yield f"http://127.0.0.1:{port}/sse"
    proc.kill()
    proc.wait(timeout=10)


@pytest.fixture
def killable_http_server() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A streamable-HTTP server this test may crash."""
    proc, port = _start_network_server("http")
    yield proc, f"http://127.0.0.1:{port}/mcp"
    proc.kill()
    proc.wait(timeout=10)
