"""Per-alert MCP selection validation and the server health check, against real test servers."""

from __future__ import annotations

import time

import pytest

from agents.mcp.health import check_servers
from agents.mcp.pool import MCPPool
from agents.mcp.selection import validate_mcp_selection

from .conftest import stdio_config, tarsy_config

pytestmark = pytest.mark.timeout(60)

CONFIG = tarsy_config({
    "tools": stdio_config(),
    "broken": stdio_config(transport={"command": "/nonexistent/mcp-server"}),
})


def test_a_valid_selection_has_no_problems(shared_pool: MCPPool) -> None:
    selection = {"servers": [{"name": "tools", "tools": ["echo", "tools.add"]}],
                 "native_tools": {"google_search": False, "url_context": True}}

    assert validate_mcp_selection(selection, CONFIG, shared_pool) == []


def test_unknown_servers_are_named_with_the_known_ones(shared_pool: MCPPool) -> None:
    problems = validate_mcp_selection({"servers": [{"name": "kafka"}]}, CONFIG, shared_pool)

    assert problems == ["mcp.servers.0.name: unknown MCP server 'kafka' (known: broken, tools)"]


def test_unknown_tools_are_named_with_the_available_ones(shared_pool: MCPPool) -> None:
    (problem,) = validate_mcp_selection({"servers": [{"name": "tools", "tools": ["echo", "delete_pod"]}]}, CONFIG,
                                        shared_pool)

    assert "unknown tool(s) 'delete_pod' on MCP server 'tools'" in problem
    assert "add, big_output" in problem


def test_tools_of_an_unreachable_server_cannot_be_checked(shared_pool: MCPPool) -> None:
    (problem,) = validate_mcp_selection({"servers": [{"name": "broken", "tools": ["x"]}]}, CONFIG, shared_pool)

    assert problem.startswith("mcp.servers.0.tools: MCP server 'broken' could not be reached")


@pytest.mark.parametrize("selection, expected", [
    ([], "mcp: must be an object"),
    ({"servers": "tools"}, "mcp.servers: must be a list"),
    ({"servers": ["tools"]}, "mcp.servers.0: must be an object"),
    ({"servers": [{"tools": ["echo"]}]}, "mcp.servers.0.name: a server name is required"),
    ({"servers": [{"name": "tools", "tools": "echo"}]}, "mcp.servers.0.tools: must be a list of tool names"),
    ({"servers": [{"name": "tools", "extra": 1}]}, "mcp.servers.0.extra: unknown key"),
    ({"servers": [{"name": "tools"}, {"name": "tools"}]}, "mcp.servers.1.name: server 'tools' is listed more"),
    ({"native_tools": {"web_browse": True}}, "mcp.native_tools.web_browse: unknown native tool"),
    ({"native_tools": {"google_search": "yes"}}, "mcp.native_tools.google_search: must be true or false"),
    ({"tools": []}, "mcp.tools: unknown key"),
])
def test_malformed_selections_are_explained(shared_pool: MCPPool, selection: object, expected: str) -> None:
    problems = validate_mcp_selection(selection, CONFIG, shared_pool)  # type: ignore[arg-type]

    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_health_reports_each_server_with_its_tools_or_its_error(shared_pool: MCPPool) -> None:
    report = {r["name"]: r for r in check_servers(CONFIG, shared_pool)}

    ok, broken = report["tools"], report["broken"]
    assert (ok["status"], ok["transport"], ok["error"]) == ("ok", "stdio", "")
    assert ok["tool_count"] == len(ok["tools"]) >= 10
    assert {"name": "echo", "description": "Return the text unchanged."} in ok["tools"]
    assert broken["status"] == "error" and "failed to start" in broken["error"] and broken["tools"] == []


def test_health_results_are_cached_briefly(pool: MCPPool) -> None:
    first = check_servers(CONFIG, pool, names=["tools"])
    pool.shutdown()  # a fresh check would now fail
    started = time.monotonic()

    again = check_servers(CONFIG, pool, names=["tools"])

    assert again == first and again[0]["status"] == "ok"
    assert time.monotonic() - started < 0.5
