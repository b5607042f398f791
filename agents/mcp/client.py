"""One live connection to one MCP server, on the official `mcp` SDK: transports and the session owner task.

anyio requires a client context to be closed by the task that opened it, so each
`ServerSession` has one owner task that opens the transport and the MCP session,
serves requests it receives through a queue (each in its own child task, so calls
to one server can overlap) and closes everything when asked or when the
connection dies. SDK types stay in this module: callers get `ToolDefinition`,
`CallResult` and `MCPError`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as SDKError
from mcp.types import (
    CONNECTION_CLOSED,
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    PaginatedRequestParams,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from agents.config.schema import MCPServerConfig, TransportConfig
from agents.llm.types import ToolDefinition

from .stderr import ServerStderr

logger = logging.getLogger(__name__)

ErrorKind = Literal["timeout", "unavailable", "protocol"]

HTTP_READ_TIMEOUT_S = 300.0  # a streamed response may stay open for a whole call; our own per-call timeout is tighter
PROBE_TIMEOUT_S = 5.0  # after a call timed out, a ping must answer this fast (or within the call's own timeout,
#                       if shorter) or the session is treated as wedged and restarted
CLOSE_TIMEOUT_S = 10.0  # stdio shutdown escalates terminate → kill within ~4 s; anything longer is a stuck owner
LIST_PAGE_LIMIT = 50  # pagination guard: a server that keeps returning cursors must not loop us forever


class MCPError(Exception):
    """A failed MCP operation. kind: "timeout" (no answer in time), "unavailable" (cannot start / died),
    "protocol" (the server answered with something we cannot use)."""

    def __init__(self, server: str, message: str, kind: ErrorKind = "protocol") -> None:
        super().__init__(f"MCP server {server!r}: {message}")
        self.server = server
        self.message = message
        self.kind = kind


class ServerCrashed(MCPError):
    """The connection died during an operation: the pool restarts the server and retries once."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(server, message, "unavailable")


@dataclass(frozen=True)
class CallResult:
    """A tool's answer, flattened to text (content parts joined; structured content as JSON when no text)."""

    text: str
    is_error: bool
    raw_size: int  # characters of `text` as the server returned it
    duration_ms: int


# ---- conversions (SDK → ours) -------------------------------------------------------------------


def tool_definition(server: str, tool: Any) -> ToolDefinition:
    """Canonical `server.tool` name; the tool's JSON input schema is passed through unchanged."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {"type": "object", "properties": {}}
    return ToolDefinition(name=f"{server}.{tool.name}", description=tool.description or "", parameters=schema)


def _part_text(part: Any) -> str:
    if isinstance(part, TextContent):
        return part.text
    if isinstance(part, EmbeddedResource):
        res = part.resource
        return res.text if isinstance(res, TextResourceContents) else f"[binary resource {res.uri}]"
    if isinstance(part, ResourceLink):
        return f"[resource link {part.uri}]"
    if isinstance(part, (ImageContent, AudioContent)):
        return f"[{part.type} {part.mime_type}, {len(part.data)} base64 chars]"
    return f"[{getattr(part, 'type', 'unknown')} content]"


def call_result(result: CallToolResult, duration_ms: int) -> CallResult:
    text = "\n".join(_part_text(p) for p in result.content)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, indent=2)
    return CallResult(text=text, is_error=bool(result.is_error), raw_size=len(text), duration_ms=duration_ms)


def describe_exception(exc: BaseException) -> str:
    """First leaf of an exception group, as `Type: message` (task groups wrap transport failures)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, SDKError):
        return "connection closed" if exc.code == CONNECTION_CLOSED else f"server error {exc.code}: {exc.message}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is_connection_loss(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_is_connection_loss(e) for e in exc.exceptions)
    if isinstance(exc, SDKError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(
        exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, httpx2.TransportError, OSError)
    )


# ---- transports ------------------------------------------------------------------------------------


# What a stdio server inherits from the TARSy process: what programs need to run (PATH, HOME, user, locale, time
# zone, temp dir), to reach a cluster (KUBECONFIG) and to download through a proxy (`npx` fetches packages).
# Never the process's own secrets (SECRET_KEY, DATABASE_URL, REDIS_URL, LLM API keys, …): anything else a server
# needs is named in its transport's `env_passthrough:` (copied when set) or `env:` (set to a value).
STDIO_INHERITED_ENV = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ", "TMPDIR", "KUBECONFIG",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
})


def stdio_environment(transport: TransportConfig, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The complete environment of a stdio server: the inherited allow-list (plus LC_*) and its `env_passthrough`
    names, then its `env:`."""
    environ = os.environ if environ is None else environ
    wanted = STDIO_INHERITED_ENV | set(transport.env_passthrough)
    env = {k: v for k, v in environ.items() if k in wanted or k.startswith("LC_")}
    return env | dict(transport.env)


def http_headers(transport: TransportConfig) -> dict[str, str]:
    headers = dict(transport.headers)
    if transport.bearer_token and not any(k.lower() == "authorization" for k in headers):
        headers["Authorization"] = f"Bearer {transport.bearer_token}"
    return headers


async def open_transport(stack: AsyncExitStack, transport: TransportConfig,
                         stderr: ServerStderr | None = None) -> tuple[Any, Any]:
    """Enter the transport on `stack` (owned by the calling task) and return its (read, write) streams. A stdio
    server writes its stderr to `stderr` (else to ours)."""
    if transport.type == "stdio":
        params = StdioServerParameters(
            command=transport.command, args=list(transport.args), env=stdio_environment(transport)
        )
        errlog = stderr.writer if stderr else sys.__stderr__ or sys.stderr  # a real fd: the child inherits it
        try:
            return await stack.enter_async_context(stdio_client(params, errlog=errlog))
        finally:
            if stderr:
                stderr.spawned()
    timeout = httpx2.Timeout(transport.timeout, read=HTTP_READ_TIMEOUT_S)
    if transport.type == "http":
        client = httpx2.AsyncClient(headers=http_headers(transport), verify=transport.verify_ssl, timeout=timeout)
        await stack.enter_async_context(client)
        return await stack.enter_async_context(streamable_http_client(transport.url, http_client=client))

    def factory(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, verify=transport.verify_ssl)

    return await stack.enter_async_context(
        sse_client(transport.url, headers=http_headers(transport), timeout=transport.timeout,
                   sse_read_timeout=HTTP_READ_TIMEOUT_S, httpx_client_factory=factory)
    )


# ---- the session owner -----------------------------------------------------------------------------


@dataclass
class _Request:
    op: Literal["list_tools", "call_tool"]
    tool: str
    arguments: dict[str, Any]
    timeout: float
    future: asyncio.Future[Any]

    def settle(self, result: Any = None, error: BaseException | None = None) -> None:
        if self.future.done():
            return
        if error is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(result)


_CLOSE = object()


class ServerSession:
    """One started server: an owner task holding the transport + MCP session, fed through a queue.

    Lives on the pool's event loop; every method must be called from that loop.
    """

    def __init__(self, name: str, cfg: MCPServerConfig) -> None:
        self.name = name
        self.cfg = cfg
        self.alive = False
        self.started_at: float | None = None
        self.close_reason = ""
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task: asyncio.Task[None] | None = None
        self._stderr: ServerStderr | None = None

    async def start(self, timeout: float) -> None:
        """Spawn/connect and initialize within `timeout`; raise MCPError("unavailable"/"timeout") otherwise.

        On failure the owner is already winding down; `close()` waits for it.
        """
        self._task = asyncio.get_running_loop().create_task(self._own(), name=f"mcp-session-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except TimeoutError:
            self._ready.cancel()
            self._task.cancel()  # stuck in spawn/initialize: it will never read its queue
            self.close_reason = f"did not start and initialize within {timeout:.0f}s"
            raise MCPError(self.name, self.close_reason, "timeout") from None
        self.alive = True
        self.started_at = time.time()

    async def request(self, op: Literal["list_tools", "call_tool"], timeout: float, tool: str = "",
                      arguments: dict[str, Any] | None = None) -> Any:
        """Send one operation to the owner and wait for its outcome (bounded by `timeout` plus a short grace)."""
        if not self.alive:
            raise ServerCrashed(self.name, self.close_reason or "the session is closed")
        req = _Request(op, tool, arguments or {}, timeout, asyncio.get_running_loop().create_future())
        # A caller that gave up (its wait was cancelled) leaves the outcome unread; consume it so asyncio stays quiet.
        req.future.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._queue.put_nowait(req)
        try:
            return await asyncio.wait_for(asyncio.shield(req.future), timeout + 1.0)
        except TimeoutError:  # the owner's own timer should have fired first; treat the session as wedged
            self._retire("no answer from the session owner")
            raise MCPError(self.name, f"{op} {tool} did not answer within {timeout:.0f}s", "timeout") from None

    async def close(self) -> None:
        """Ask the owner to close the session and wait for it (cancelling it if it does not finish in time)."""
        self._retire(self.close_reason or "closed")
        task = self._task
        if task is None or task.done():
            return
        if not self._ready.done() or self._ready.cancelled():
            task.cancel()  # still starting: it is not reading its queue yet
        done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)

    def _retire(self, reason: str) -> None:
        """Stop accepting requests and tell the owner to close; safe to call repeatedly."""
        if self.alive or not self.close_reason:
            self.close_reason = reason
        self.alive = False
        self._queue.put_nowait(_CLOSE)

    async def _own(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                transport = self.cfg.transport
                if transport.type == "stdio":
                    self._stderr = ServerStderr(self.name, stdio_environment(transport))
                read, write = await open_transport(stack, transport, self._stderr)
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                if not self._ready.done():
                    self._ready.set_result(None)
                async with anyio.create_task_group() as tg:
                    while (item := await self._queue.get()) is not _CLOSE:
                        tg.start_soon(self._serve, session, item)
                    tg.cancel_scope.cancel()
        except BaseException as exc:  # noqa: BLE001 - the owner must end cleanly whatever killed the connection
            reason = describe_exception(exc)
            if not self._ready.done():
                said = await self._stderr.reason() if self._stderr and isinstance(exc, Exception) else ""
                reason = f"{reason}; {said}" if said else reason
                self._ready.set_exception(MCPError(self.name, f"failed to start: {reason}", "unavailable"))
            if not self.close_reason:
                self.close_reason = f"connection lost: {reason}"
            if not isinstance(exc, (Exception, asyncio.CancelledError)):
                raise
        finally:
            self.alive = False
            self._fail_queued()

    def _fail_queued(self) -> None:
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if isinstance(item, _Request):
                item.settle(error=ServerCrashed(self.name, self.close_reason or "the session closed"))

    async def _serve(self, session: ClientSession, req: _Request) -> None:
        started = time.monotonic()
        try:
            with anyio.fail_after(req.timeout):
                if req.op == "list_tools":
                    result: Any = await self._list_tools(session)
                else:
                    raw = await session.call_tool(req.tool, req.arguments)
                    if not isinstance(raw, CallToolResult):
                        raise MCPError(self.name, f"unexpected result type {type(raw).__name__}", "protocol")
                    result = call_result(raw, int((time.monotonic() - started) * 1000))
        except TimeoutError:
            req.settle(error=MCPError(self.name, f"{self._what(req)} timed out after {req.timeout:.0f}s", "timeout"))
            await self._probe(session, req.timeout)
        except anyio.get_cancelled_exc_class():
            req.settle(error=ServerCrashed(self.name, f"connection closed during {self._what(req)}"))
            raise
        except MCPError as exc:
            req.settle(error=exc)
        except Exception as exc:  # noqa: BLE001 - classified into our error kinds, never leaked as SDK types
            if _is_connection_loss(exc):
                self._retire(f"connection lost: {describe_exception(exc)}")
                req.settle(error=ServerCrashed(self.name, f"{self._what(req)} failed: {describe_exception(exc)}"))
            else:
                req.settle(error=MCPError(self.name, f"{self._what(req)} failed: {describe_exception(exc)}"))
        else:
            req.settle(result)

    async def _list_tools(self, session: ClientSession) -> list[ToolDefinition]:
        tools: list[ToolDefinition] = []
        cursor: str | None = None
        for _ in range(LIST_PAGE_LIMIT):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(tool_definition(self.name, t) for t in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def _probe(self, session: ClientSession, timeout: float) -> None:
        """After a timeout, keep the session only if the server still answers a ping."""
        with anyio.move_on_after(min(PROBE_TIMEOUT_S, max(timeout, 1.0))):
            try:
                await session.send_ping()
                return
            except Exception as exc:  # noqa: BLE001 - any ping failure means the session is unusable
                logger.info("MCP server %s failed its ping after a timeout: %s", self.name, describe_exception(exc))
        logger.warning("MCP server %s is unresponsive after a timed-out call; restarting it", self.name)
        self._retire("unresponsive after a timed-out call")

    @staticmethod
    def _what(req: _Request) -> str:
        return "tools/list" if req.op == "list_tools" else f"tool {req.tool!r}"
