"""Validation of an alert's `mcp` override before the session is queued.

A selection naming a server or tool that does not exist would only fail deep in
an investigation; rejecting it at intake gives the submitter a precise message.
"""

from __future__ import annotations

from typing import Any

from agents.config.registry import TarsyConfig

from .client import MCPError
from .pool import MCPPool, get_pool

SELECTION_LIST_TIMEOUT_S = 15.0  # intake answers an HTTP request: a server that cannot list its tools this fast is down
NATIVE_TOOL_KEYS = ("google_search", "code_execution", "url_context")
_TOP_KEYS = ("servers", "native_tools")
_SERVER_KEYS = ("name", "tools")


def merge_repeated_servers(servers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per server (well-formed entries, first-mention order), so a server listed twice is checked and
    offered once. Its tools are the union of its entries', each once; an entry naming no tools (the whole server)
    wins over any subset."""
    tools_of: dict[str, list[str] | None] = {}
    for entry in servers:
        name, tools = entry["name"], entry.get("tools") or None
        known = tools_of.get(name, [])
        tools_of[name] = None if known is None or tools is None else list(dict.fromkeys([*known, *tools]))
    return [{"name": name, "tools": tools} if tools else {"name": name} for name, tools in tools_of.items()]


def validate_mcp_selection(selection: dict[str, Any], config: TarsyConfig, pool: MCPPool | None = None) -> list[str]:
    """Problems with `{"servers": [{"name", "tools"?}], "native_tools": {...}}`; empty when valid."""
    if not isinstance(selection, dict):
        return ["mcp: must be an object with 'servers' and/or 'native_tools'"]
    allowed = ", ".join(_TOP_KEYS)
    problems = [f"mcp.{key}: unknown key (allowed: {allowed})" for key in selection if key not in _TOP_KEYS]
    problems += _native_tool_problems(selection.get("native_tools"))
    servers = selection.get("servers")
    if servers is None:
        return problems
    if not isinstance(servers, list):
        return [*problems, "mcp.servers: must be a list of {name, tools?} objects"]
    seen: set[str] = set()
    for index, entry in enumerate(servers):
        problems += _server_problems(f"mcp.servers.{index}", entry, config, seen, pool)
    return problems


def _native_tool_problems(native: Any) -> list[str]:
    if native is None:
        return []
    if not isinstance(native, dict):
        return ["mcp.native_tools: must be an object of booleans"]
    problems = []
    for key, value in native.items():
        if key not in NATIVE_TOOL_KEYS:
            problems.append(f"mcp.native_tools.{key}: unknown native tool (known: {', '.join(NATIVE_TOOL_KEYS)})")
        elif value is not None and not isinstance(value, bool):
            problems.append(f"mcp.native_tools.{key}: must be true or false")
    return problems


def _server_problems(where: str, entry: Any, config: TarsyConfig, seen: set[str], pool: MCPPool | None) -> list[str]:
    if not isinstance(entry, dict):
        return [f"{where}: must be an object with 'name' and optional 'tools'"]
    problems = [f"{where}.{key}: unknown key (allowed: name, tools)" for key in entry if key not in _SERVER_KEYS]
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        return [*problems, f"{where}.name: a server name is required"]
    if name not in config.mcp_servers:
        known = ", ".join(sorted(config.mcp_servers)) or "none"
        return [*problems, f"{where}.name: unknown MCP server {name!r} (known: {known})"]
    if config.mcp_servers[name].actions:
        return [*problems, f"{where}.name: {name!r} is an action server; an alert cannot select it"]
    if name in seen:
        problems.append(f"{where}.name: server {name!r} is listed more than once")
    seen.add(name)
    tools = entry.get("tools")
    if tools is None:
        return problems
    if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
        return [*problems, f"{where}.tools: must be a list of tool names"]
    return problems + _tool_problems(where, name, tools, config, pool)


def _tool_problems(where: str, server: str, tools: list[str], config: TarsyConfig, pool: MCPPool | None) -> list[str]:
    if not tools:
        return []
    cfg = config.mcp_servers[server]
    try:
        listed = (pool or get_pool()).list_tools(server, cfg, timeout=SELECTION_LIST_TIMEOUT_S)
    except MCPError as exc:
        return [f"{where}.tools: MCP server {server!r} could not be reached to check its tools: {exc.message}"]
    available = sorted(t.name.split(".", 1)[1] for t in listed)
    unknown = [t for t in tools if t not in available and not (t.startswith(f"{server}.") and
                                                               t.split(".", 1)[1] in available)]
    if not unknown:
        return []
    return [f"{where}.tools: unknown tool(s) {', '.join(repr(t) for t in unknown)} on MCP server {server!r} "
            f"(available: {', '.join(available) or 'none'})"]
