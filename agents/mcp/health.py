"""Health of the configured MCP servers for the system page: can each start, and what tools does it offer."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agents.config.registry import TarsyConfig

from .client import MCPError
from .pool import MCPPool, get_pool

HEALTH_CACHE_TTL_S = 15.0  # the system page polls about this often; checking more often only adds load on servers
HEALTH_LIST_TIMEOUT_S = 10.0  # a page must not wait on a stuck server: longer than this counts as an error
MAX_PARALLEL_CHECKS = 4  # servers are checked side by side so one slow server does not delay the others' results

_cache: dict[str, tuple[float, dict[str, Any]]] = {}  # keyed by name + config, so a changed config is re-checked
_cache_lock = threading.Lock()


UNUSED_NOTE = "not started: no chain uses it"


def check_servers(config: TarsyConfig, pool: MCPPool | None = None, names: list[str] | None = None) -> list[dict]:
    """One dict per server: name, transport, status ("ok"/"error"/"unused"), error, tool_count, tools
    [{name, description}]. Without `names`: every configured server, those no chain uses reported "unused"
    without being started (`TarsyConfig.mcp_servers_in_use`).

    Results are cached for HEALTH_CACHE_TTL_S per server.
    """
    if names is None:
        in_use = config.mcp_servers_in_use()
        checked = {r["name"]: r for r in check_servers(config, pool, sorted(in_use))}
        return [checked.get(name) or _unused(config, name) for name in sorted(config.mcp_servers)]
    pool = pool or get_pool()
    wanted = list(names)
    now = time.monotonic()
    keys = {n: _cache_key(config, n) for n in wanted}
    with _cache_lock:
        fresh = {n: _cache[keys[n]][1] for n in wanted if keys[n] in _cache and _cache[keys[n]][0] > now}
    stale = [n for n in wanted if n not in fresh]
    if stale:
        with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_CHECKS, len(stale))) as workers:
            checked = dict(zip(stale, workers.map(lambda n: _check(config, pool, n), stale), strict=True))
        with _cache_lock:
            for name, result in checked.items():
                _cache[keys[name]] = (time.monotonic() + HEALTH_CACHE_TTL_S, result)
        fresh.update(checked)
    return [dict(fresh[n]) for n in wanted]


def _cache_key(config: TarsyConfig, name: str) -> str:
    cfg = config.mcp_servers.get(name)
    return f"{name}\0{cfg.model_dump_json() if cfg is not None else ''}"


def _unused(config: TarsyConfig, name: str) -> dict[str, Any]:
    return {"name": name, "transport": config.mcp_servers[name].transport.type, "status": "unused",
            "error": UNUSED_NOTE, "tool_count": 0, "tools": []}


def _check(config: TarsyConfig, pool: MCPPool, name: str) -> dict[str, Any]:
    cfg = config.mcp_servers.get(name)
    if cfg is None:
        return {"name": name, "transport": "", "status": "error", "error": "not configured", "tool_count": 0,
                "tools": []}
    result: dict[str, Any] = {"name": name, "transport": cfg.transport.type, "status": "ok", "error": "",
                              "tool_count": 0, "tools": []}
    try:
        tools = pool.list_tools(name, cfg, timeout=HEALTH_LIST_TIMEOUT_S)
    except MCPError as exc:
        result.update(status="error", error=exc.message)
        return result
    result["tools"] = [{"name": t.name.split(".", 1)[1], "description": t.description} for t in tools]
    result["tool_count"] = len(tools)
    return result


def clear_cache() -> None:
    """Forget cached results (after a config reload, or between tests)."""
    with _cache_lock:
        _cache.clear()


_refreshing = threading.Lock()


def known_problems(config: TarsyConfig, pool: MCPPool | None = None) -> list[str]:
    """Failures seen by recent checks, without waiting: a stale cache is refreshed in the background, so a
    liveness probe never blocks on a slow server. Used for /health warnings."""
    now = time.monotonic()
    in_use = sorted(config.mcp_servers_in_use())
    keys = {n: _cache_key(config, n) for n in in_use}
    with _cache_lock:
        cached = {n: _cache.get(k) for n, k in keys.items()}
    if any(entry is None or entry[0] <= now for entry in cached.values()) and _refreshing.acquire(blocking=False):
        def refresh() -> None:
            try:
                check_servers(config, pool, in_use)
            finally:
                _refreshing.release()

        threading.Thread(target=refresh, name="mcp-health", daemon=True).start()
    return [f"MCP server {name!r}: {entry[1]['error']}" for name, entry in sorted(cached.items())
            if entry is not None and entry[1]["status"] == "error"]


def not_yet_checked(config: TarsyConfig) -> list[str]:
    """Servers in use that no check has answered for yet (the first runs in the background): not known to work,
    so /health must not call them ok — a server that has not started may still fail."""
    in_use = sorted(config.mcp_servers_in_use())
    with _cache_lock:
        return [name for name in in_use if _cache_key(config, name) not in _cache]
