"""A small MCP server with tools that exercise the client: normal calls, big output, crashes, hangs, errors.

Run: `python tools_server.py stdio` or `python tools_server.py http|sse --port N`.
Logging goes to stderr (stdout is the stdio transport's wire).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_YAML = """apiVersion: v1
kind: Secret
metadata:
  name: db-credentials
  namespace: prod
type: Opaque
data:
  password: c3VwZXItc2VjcmV0LXBhc3N3b3Jk
  username: YWRtaW4=
"""


def build_server(name: str = "test-tools") -> MCPServer:
    """All tools on one server so each transport is tested with the same surface."""
    server = MCPServer(name, instructions="Test server for the TARSy MCP client.", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def big_output(n: int) -> str:
        """Return n characters of log-like text."""
        line = "2024-01-01T00:00:00Z INFO pod/web-0 request served in 12ms\n"
        return (line * (n // len(line) + 1))[:n]

    @server.tool()
    def crash() -> str:
        """Kill the server process in the middle of the call."""
        os._exit(3)

    @server.tool()
    def crash_once(flag_path: str) -> str:
        """Crash the first time (creating flag_path), succeed afterwards: a transient server death."""
        flag = Path(flag_path)
        if not flag.exists():
            flag.write_text(str(os.getpid()))
            os._exit(4)
        return f"recovered in {os.getpid()}"

    @server.tool()
    def hang(seconds: float) -> str:
        """Block the whole server for `seconds` (a stuck backend)."""
        time.sleep(seconds)
        return "woke up"

    @server.tool()
    async def freeze(seconds: float) -> str:
        """Block the server's event loop for `seconds`: the server cannot even answer a ping (a wedged process)."""
        time.sleep(seconds)
        return "thawed"

    in_flight = {"now": 0, "peak": 0}

    @server.tool()
    async def overlap(seconds: float) -> int:
        """Wait `seconds` without blocking the server; return the most calls of this tool seen running at once."""
        in_flight["now"] += 1
        in_flight["peak"] = max(in_flight["peak"], in_flight["now"])
        try:
            await anyio.sleep(seconds)
        finally:
            in_flight["now"] -= 1
        return in_flight["peak"]

    @server.tool()
    def fail(message: str = "backend refused") -> str:
        """Fail with a tool error the client sees as is_error."""
        raise ToolError(message)

    @server.tool()
    def pid() -> int:
        """The server's process id: lets tests see whether a process was reused or restarted."""
        return os.getpid()

    @server.tool()
    def get_secret() -> str:
        """A kubernetes Secret manifest plus an AWS access key in plain text."""
        return f"{SECRET_YAML}\n# creds\naws_access_key_id = {AWS_KEY}\n"

    @server.tool()
    def request_headers(ctx: Context) -> dict:
        """HTTP headers the server received (authorization, custom headers); empty over stdio."""
        headers = ctx.headers or {}
        return {k.lower(): v for k, v in headers.items() if k.lower() in ("authorization", "x-tenant")}

    @server.tool()
    def env_value(name: str) -> str:
        """An environment variable of the server process (checks the stdio env merge)."""
        return os.environ.get(name, "<unset>")

    @server.tool()
    def environment() -> dict:
        """The server process's whole environment (checks what a stdio server inherits)."""
        return dict(os.environ)

    @server.tool()
    def pod_info(namespace: str, pod: str) -> dict:
        """Structured output: a dict becomes structured content."""
        return {"namespace": namespace, "pod": pod, "phase": "Running"}

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--name", default="test-tools")
    args = parser.parse_args()
    server = build_server(args.name)
    if args.transport == "stdio":
        server.run()
    elif args.transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run("sse", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
