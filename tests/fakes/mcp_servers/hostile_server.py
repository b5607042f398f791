"""MCP servers that misbehave in ways that put outside text where TARSy stores it.

    python hostile_server.py nul                  # a working server whose tool returns NUL bytes
    python hostile_server.py fail-list MESSAGE    # starts, but answers tools/list with an error carrying MESSAGE
    python hostile_server.py refuse-start MESSAGE # answers `initialize` with a JSON-RPC error carrying MESSAGE

`refuse-start` speaks JSON-RPC on stdio itself: the SDK's server always accepts `initialize`, while real servers
that cannot reach their backend (or reject their credentials) fail the handshake with such an error.
"""

from __future__ import annotations

import json
import sys

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

INTERNAL_ERROR = -32603
NUL_OUTPUT = "header\x00\x00binary\x00tail"


class FailingListServer(MCPServer):
    """Initializes normally; every tools/list fails with the configured message."""

    def __init__(self, message: str) -> None:
        super().__init__("fail-list", log_level="WARNING")
        self._message = message

    async def list_tools(self):  # type: ignore[override]
        raise MCPError(code=INTERNAL_ERROR, message=self._message)


def nul_server() -> MCPServer:
    server = MCPServer("nul-output", log_level="WARNING")

    @server.tool()
    def dump() -> str:
        """Binary-ish output with NUL characters, as `cat` of a binary file gives."""
        return NUL_OUTPUT

    return server


def refuse_start(message: str) -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("method") == "initialize":
            error = {"code": INTERNAL_ERROR, "message": message}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}) + "\n")
            sys.stdout.flush()
            return


def main() -> None:
    mode, *rest = sys.argv[1:]
    if mode == "nul":
        nul_server().run()
    elif mode == "fail-list":
        FailingListServer(rest[0]).run()
    elif mode == "refuse-start":
        refuse_start(rest[0])
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
