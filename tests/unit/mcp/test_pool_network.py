"""The pool against real streamable-HTTP and SSE MCP servers running as their own processes."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from agents.config.schema import MCPServerConfig
from agents.mcp.pool import MCPError, MCPPool

from .conftest import unique_name

pytestmark = pytest.mark.timeout(60)


def http_config(url: str, **transport: object) -> MCPServerConfig:
    return MCPServerConfig(transport={"type": "http", "url": url, "timeout": 5, **transport}, call_timeout=10)


def test_streamable_http_lists_tools_with_their_schema(shared_pool: MCPPool, http_server: str) -> None:
    tools = {t.name: t for t in shared_pool.list_tools("remote", http_config(http_server))}

    assert tools["remote.big_output"].parameters["properties"]["n"]["type"] == "integer"
    assert tools["remote.echo"].description == "Return the text unchanged."


def test_streamable_http_calls_reuse_one_session(shared_pool: MCPPool, http_server: str) -> None:
    cfg = http_config(http_server)

    answers = [shared_pool.call_tool("remote", cfg, "add", {"a": i, "b": i}).text for i in range(20)]

    assert answers == [str(2 * i) for i in range(20)]
    assert shared_pool.status()["remote"].restarts == 0


def test_bearer_token_and_headers_reach_the_http_server(shared_pool: MCPPool, http_server: str) -> None:
    cfg = http_config(http_server, bearer_token="s3cr3t-token", headers={"X-Tenant": "team-a"})

    seen = json.loads(shared_pool.call_tool(unique_name("auth"), cfg, "request_headers", {}).text)

    assert seen == {"authorization": "Bearer s3cr3t-token", "x-tenant": "team-a"}


def test_large_http_output_arrives_whole(shared_pool: MCPPool, http_server: str) -> None:
    result = shared_pool.call_tool("remote", http_config(http_server), "big_output", {"n": 200_000})

    assert result.raw_size == 200_000 == len(result.text)


def test_an_http_timeout_is_reported_within_the_limit(shared_pool: MCPPool, http_server: str) -> None:
    cfg = http_config(http_server)
    shared_pool.list_tools("remote", cfg)
    started = time.monotonic()

    with pytest.raises(MCPError) as failure:
        shared_pool.call_tool("remote", cfg, "hang", {"seconds": 5}, timeout=1.0)

    assert failure.value.kind == "timeout"
    assert time.monotonic() - started < 2.0


def test_a_dead_http_server_is_unavailable_after_one_reconnect_attempt(
    shared_pool: MCPPool, killable_http_server: tuple[subprocess.Popen[bytes], str]
) -> None:
    proc, url = killable_http_server
    name, cfg = unique_name("dying"), http_config(url)
    assert shared_pool.call_tool(name, cfg, "pid", {}).text == str(proc.pid)
    started = time.monotonic()

    with pytest.raises(MCPError) as failure:
        shared_pool.call_tool(name, cfg, "crash", {})

    assert failure.value.kind == "unavailable"
    assert time.monotonic() - started < 8.0
    assert proc.wait(timeout=5) == 3


def test_an_unreachable_http_server_is_unavailable(shared_pool: MCPPool) -> None:
    cfg = http_config("http://127.0.0.1:9/mcp")

    with pytest.raises(MCPError) as failure:
        shared_pool.list_tools(unique_name("nowhere"), cfg, timeout=5)

    assert failure.value.kind == "unavailable"


def test_sse_transport_lists_and_calls(shared_pool: MCPPool, sse_server: str) -> None:
    cfg = MCPServerConfig(transport={"type": "sse", "url": sse_server, "timeout": 5, "bearer_token": "tok"})

    names = {t.name for t in shared_pool.list_tools("legacy", cfg)}
    result = shared_pool.call_tool("legacy", cfg, "echo", {"text": "over sse"})
    headers = json.loads(shared_pool.call_tool("legacy", cfg, "request_headers", {}).text)

    assert "legacy.echo" in names
    assert result.text == "over sse"
    assert headers["authorization"] == "Bearer tok"
