"""Per-process pool of MCP server sessions, usable from any thread.

Spawning and initializing a server costs about a second, so sessions stay open
across tasks. A background thread runs one asyncio loop that owns every
session; sync callers submit coroutines with `run_coroutine_threadsafe` and wait
with a timeout. Servers start lazily, restart after a crash (the interrupted
operation is retried once) and stop on `shutdown()` (also registered atexit).
Error text comes from outside (server messages, transport errors): it is masked
here, before it is kept in the status or handed to any caller.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from agents.config.schema import MCPServerConfig
from agents.llm.types import ToolDefinition

from .client import CallResult, MCPError, ServerCrashed, ServerSession
from .masking.boundary import mask_text

__all__ = ["CallResult", "MCPError", "MCPPool", "ServerStatus", "get_pool"]

T = TypeVar("T")

TOOLS_CACHE_TTL_S = 30.0  # tool lists change rarely; re-listing on every LLM iteration would double the traffic
WAIT_MARGIN_S = 5.0  # sync callers wait this much beyond an operation's budget: scheduling + closing a dead session
SHUTDOWN_TIMEOUT_S = 15.0  # stdio servers get terminate → kill inside this; shutdown must not hang process exit


@dataclass
class ServerStatus:
    """What the pool knows about one server (for health pages and logs)."""

    name: str
    transport: str
    state: str  # "running" | "stopped" | "failed"
    started_at: float | None = None  # of the current (or last) session
    restarts: int = 0  # sessions started after the first one (crashes, wedged servers, config changes)
    calls: int = 0
    failures: int = 0
    last_error: str = ""
    tool_count: int | None = None
    in_flight: int = 0  # operations holding one of the server's call slots
    waiting: int = 0  # operations waiting for a slot (see MCPServerConfig.max_concurrent_calls)


class MCPPool:
    """Sessions to MCP servers keyed by server name, owned by one background event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False
        # Everything below is touched only on the loop thread.
        self._sessions: dict[str, ServerSession] = {}
        self._retiring: set[ServerSession] = set()
        self._start_locks: dict[str, asyncio.Lock] = {}
        self._tools: dict[str, tuple[float, MCPServerConfig, list[ToolDefinition]]] = {}
        self._status: dict[str, ServerStatus] = {}
        self._slots: dict[str, tuple[int, asyncio.Semaphore]] = {}

    # ---- public sync API ---------------------------------------------------------------------------

    def list_tools(self, server_name: str, cfg: MCPServerConfig, timeout: float | None = None) -> list[ToolDefinition]:
        """Tools of one server as `server.tool` definitions (cached for TOOLS_CACHE_TTL_S).

        `timeout` (for health checks and intake) bounds the listing and also each server start;
        without it a start gets the init timeout and the listing the call timeout.
        """
        budget = timeout if timeout is not None else cfg.call_timeout
        start = min(cfg.transport.timeout, timeout) if timeout is not None else cfg.transport.timeout
        return self._run(server_name, self._list_tools(server_name, cfg, budget, start), 2 * start + budget)

    def call_tool(self, server_name: str, cfg: MCPServerConfig, tool: str, arguments: dict[str, Any],
                  timeout: float | None = None) -> CallResult:
        """Call one tool; raises MCPError.

        `timeout` (default cfg.call_timeout) bounds the call, both attempts together when a crash forces a
        restart and retry; starting the server is bounded separately by its init timeout.
        """
        budget = timeout if timeout is not None else cfg.call_timeout
        start = cfg.transport.timeout
        return self._run(server_name, self._call_tool(server_name, cfg, tool, arguments, budget, start),
                         2 * start + budget)

    def status(self) -> dict[str, ServerStatus]:
        if self._loop is None or self._closed:
            return {}
        return self._run("pool", self._snapshot(), 5.0)

    def shutdown(self) -> None:
        """Close every session and stop the loop thread; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if thread.is_alive() and threading.current_thread() is not thread:
            fut = asyncio.run_coroutine_threadsafe(self._close_all(), loop)
            try:
                fut.result(timeout=SHUTDOWN_TIMEOUT_S + WAIT_MARGIN_S)
            except (concurrent.futures.TimeoutError, RuntimeError):
                fut.cancel()
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=WAIT_MARGIN_S)

    # ---- loop thread plumbing -----------------------------------------------------------------------

    def _ensure_loop(self, server_name: str) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise MCPError(server_name, "the MCP pool is shut down", "unavailable")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()
                    loop.close()

                self._thread = threading.Thread(target=run, name="mcp-pool", daemon=True)
                self._thread.start()
                ready.wait(timeout=WAIT_MARGIN_S)
                self._loop = loop
            return self._loop

    def _run(self, server_name: str, coro: Coroutine[Any, Any, T], budget: float) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("MCPPool's sync API must not be called from its own event loop thread")
        try:
            loop = self._ensure_loop(server_name)
        except MCPError:
            coro.close()
            raise
        fut = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return fut.result(timeout=budget + WAIT_MARGIN_S)
        except MCPError as exc:
            raise MCPError(exc.server, mask_text(exc.message), exc.kind) from None
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise MCPError(server_name, f"no answer within {budget:.0f}s", "timeout") from None
        except concurrent.futures.CancelledError:
            raise MCPError(server_name, "the operation was cancelled (pool shutting down)", "unavailable") from None

    # ---- coroutines on the loop -----------------------------------------------------------------------

    async def _list_tools(self, name: str, cfg: MCPServerConfig, budget: float,
                          start: float) -> list[ToolDefinition]:
        cached = self._tools.get(name)
        if cached and cached[0] > time.monotonic() and cached[1] == cfg:
            return list(cached[2])
        tools: list[ToolDefinition] = await self._with_session(name, cfg, budget, start, "list_tools")
        self._tools[name] = (time.monotonic() + TOOLS_CACHE_TTL_S, cfg, tools)
        self._state(name, cfg).tool_count = len(tools)
        return list(tools)

    async def _call_tool(self, name: str, cfg: MCPServerConfig, tool: str, arguments: dict[str, Any],
                         budget: float, start: float) -> CallResult:
        status = self._state(name, cfg)
        status.calls += 1
        try:
            result: CallResult = await self._with_session(name, cfg, budget, start, "call_tool", tool,
                                                               arguments)
        except MCPError as exc:
            status.failures += 1
            status.last_error = mask_text(exc.message)
            raise
        return result

    async def _with_session(self, name: str, cfg: MCPServerConfig, budget: float, start: float, op: Any,
                            tool: str = "", arguments: dict[str, Any] | None = None) -> Any:
        """Run one operation in one of the server's call slots; after a crash restart the server and retry it once.

        Waiting for a slot counts against `budget`. Each server start is bounded by `start`; the operation (both
        attempts together) by what is left of `budget`, counted from the first attempt.
        """
        slots = self._call_slots(name, cfg)
        status = self._state(name, cfg)
        waited_from = time.monotonic()
        status.waiting += 1
        try:
            async with asyncio.timeout(budget):
                await slots.acquire()
        except TimeoutError:
            raise MCPError(name, f"all {cfg.call_slots()} call slots stayed busy for {budget:.0f}s",
                           "timeout") from None
        finally:
            status.waiting -= 1
        status.in_flight += 1
        try:
            return await self._attempts(name, cfg, budget - (time.monotonic() - waited_from), start, op, tool,
                                        arguments)
        finally:
            status.in_flight -= 1
            slots.release()

    def _call_slots(self, name: str, cfg: MCPServerConfig) -> asyncio.Semaphore:
        """The server's slots; a changed cap takes effect for new operations (running ones keep theirs)."""
        cap = cfg.call_slots()
        current = self._slots.get(name)
        if current is None or current[0] != cap:
            current = self._slots[name] = (cap, asyncio.Semaphore(cap))
        return current[1]

    async def _attempts(self, name: str, cfg: MCPServerConfig, budget: float, start: float, op: Any, tool: str,
                        arguments: dict[str, Any] | None) -> Any:
        call_deadline: float | None = None
        first_error: ServerCrashed | None = None
        for _attempt in range(2):
            session = await self._session(name, cfg, start)
            if call_deadline is None:
                call_deadline = time.monotonic() + budget
            remaining = call_deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                return await session.request(op, remaining, tool, arguments)
            except ServerCrashed as exc:
                self._drop(session)
                if first_error is not None:
                    raise MCPError(name, f"crashed again after a restart: {exc.message} "
                                         f"(first failure: {first_error.message})", "unavailable") from None
                first_error = exc
        detail = first_error.message if first_error else "no time left"
        raise MCPError(name, f"{detail}; no time left to restart it and retry", "unavailable")

    async def _session(self, name: str, cfg: MCPServerConfig, start_timeout: float) -> ServerSession:
        """The live session for `name`, starting (or replacing) it if needed."""
        if self._closed:  # a retry racing shutdown must not start a server nobody will stop
            raise MCPError(name, "the MCP pool is shut down", "unavailable")
        current = self._sessions.get(name)
        if current is not None and current.alive and current.cfg == cfg:
            return current
        lock = self._start_locks.setdefault(name, asyncio.Lock())
        try:  # another caller may be starting it: wait for that start, bounded like our own would be
            await asyncio.wait_for(lock.acquire(), start_timeout)
        except TimeoutError:
            raise MCPError(name, "timed out waiting for the server to start", "timeout") from None
        try:
            current = self._sessions.get(name)
            if current is not None and current.alive and current.cfg == cfg:
                return current
            if current is not None:
                self._drop(current)
            status = self._state(name, cfg)
            session = ServerSession(name, cfg)
            try:
                await session.start(start_timeout)
            except MCPError as exc:
                status.state, status.last_error = "failed", mask_text(exc.message)
                self._drop(session)
                raise
            self._sessions[name] = session
            if status.started_at is not None:
                status.restarts += 1
            status.state, status.started_at = "running", session.started_at
            return session
        finally:
            lock.release()

    def _drop(self, session: ServerSession) -> None:
        """Forget a session and let it close in the background (its owner task does the closing)."""
        if self._sessions.get(session.name) is session:
            del self._sessions[session.name]
            status = self._status.get(session.name)
            if status is not None:
                status.state = "stopped"
                status.last_error = mask_text(session.close_reason) or status.last_error
        self._retiring.add(session)
        task = asyncio.get_running_loop().create_task(session.close())
        task.add_done_callback(lambda _t: self._retiring.discard(session))

    def _state(self, name: str, cfg: MCPServerConfig) -> ServerStatus:
        status = self._status.get(name)
        if status is None:
            status = self._status[name] = ServerStatus(name=name, transport=cfg.transport.type, state="stopped")
        return status

    async def _snapshot(self) -> dict[str, ServerStatus]:
        for session in list(self._sessions.values()):
            if not session.alive:
                self._drop(session)
        return {name: ServerStatus(**vars(s)) for name, s in self._status.items()}

    async def _close_all(self) -> None:
        for session in list(self._sessions.values()):
            self._drop(session)
        pending = [s.close() for s in list(self._retiring)]
        if pending:
            try:
                await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), SHUTDOWN_TIMEOUT_S)
            except TimeoutError:
                pass  # owners that ignore cancellation die with the daemon thread; process exit must go on


# ---- the process-wide pool ------------------------------------------------------------------------------

_POOL: MCPPool | None = None
_POOL_PID = 0
_POOL_LOCK = threading.Lock()


def get_pool() -> MCPPool:
    """The pool of this process, created on first use (a forked child or a shut-down pool gets a new one)."""
    global _POOL, _POOL_PID
    with _POOL_LOCK:
        if _POOL is None or os.getpid() != _POOL_PID or _POOL._closed:
            _POOL, _POOL_PID = MCPPool(), os.getpid()
            atexit.register(_POOL.shutdown)
        return _POOL


def _forget_after_fork() -> None:
    """A forked child inherits no threads: the parent's loop thread is gone, so start afresh."""
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def shutdown_pool() -> None:
    """Stop this process's MCP servers, if it started any (worker exit, `serve` exit)."""
    with _POOL_LOCK:
        pool = _POOL if os.getpid() == _POOL_PID else None
    if pool is not None:
        pool.shutdown()
