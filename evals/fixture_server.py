"""A stdio MCP server that answers from a scenario's `tools.yaml`.

It offers the tools of a real MCP server — kubernetes-mcp-server or prometheus-mcp-server, whichever the
scenario records for `--server` — with the same names, descriptions and input schemas (`fixture_tools`), so an
eval goes through TARSy's real MCP path: pool, executor, masking, summarization. A call no fixture matches is
a fixture gap: the caller gets an MCP error whose text carries `GAP_MARKER`, never an empty result.

With `--write` a Kubernetes server also offers the action tools (`fixture_tools.ACTION_TOOLS`), as
kubernetes-mcp-server does without `--read-only`; TARSy runs it as an action server. With `--state FILE`, each
action call that succeeds is appended to FILE, and every server of the run given the same FILE answers from then
on with the fixtures recorded `after_action` (the state the cluster shows once the action ran), so a verification
read passes or fails as the scenario recorded it.

    python -m evals.fixture_server --tools evals/scenarios/NAME/tools.yaml --server kubernetes-server
"""

from __future__ import annotations

import argparse
import functools
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .fixture_tools import ACTION_TOOLS, ACTION_TOOLSET, INSTRUCTIONS, TOOLSETS
from .fixtures import ToolFixtures, action_record, actions_read, find_fixture, gap_message, load_tools, toolset


class IdleExit:
    """Exit after `seconds` without a tool call. A run starts one server per scenario and keeps each session open
    (~70 MB apiece); a scenario's calls come in a burst, and should one come later the MCP pool restarts the
    server, which answers the same (fixtures are stateless)."""

    STARTUP_GRACE_S = 30.0  # start-up, initialize and the tool listing before the first call, on a loaded host

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.last = time.monotonic()
        self.called = False

    def touch(self) -> None:
        self.last = time.monotonic()
        self.called = True

    def start(self) -> None:
        def watch() -> None:
            while time.monotonic() - self.last < (self.seconds if self.called
                                                  else max(self.seconds, self.STARTUP_GRACE_S)):
                time.sleep(min(5.0, self.seconds))
            os._exit(0)  # stdio transport: the client sees end of stream, as when a server stops

        threading.Thread(target=watch, name="idle-exit", daemon=True).start()


def _answering(fn: Callable[..., str], name: str, fixtures: ToolFixtures, idle: IdleExit | None = None,
               state: Path | None = None, action: bool = False) -> Callable[..., Any]:
    """A tool with `fn`'s signature (and so its schema) that answers from the fixtures, as they stand after the
    actions recorded in `state`. Errors are returned as error results with the recorded text verbatim (a raised
    ToolError would get a prefix added). An `action` tool's successful call is recorded in `state`."""
    from mcp.types import CallToolResult, TextContent

    def failed(text: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    @functools.wraps(fn)
    def answer(**arguments: Any) -> Any:
        if idle is not None:
            idle.touch()
        fixture = find_fixture(fixtures, name, arguments, actions_read(state))
        if fixture is None:
            return failed(gap_message(name, arguments))
        if fixture.error is not None:
            return failed(fixture.error)
        if action and state is not None:
            action_record(state, name, {k: v for k, v in arguments.items() if v is not None})
        return fixture.result or ""

    return answer


def build_server(fixtures: ToolFixtures, server_name: str, idle: IdleExit | None = None, *, write: bool = False,
                 state: Path | None = None) -> Any:
    """The MCP server for one logical server of a scenario (keys `server_name.tool` of the fixtures); with `write`,
    a Kubernetes server also offers the action tools."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    kind = toolset(fixtures, server_name)
    server = MCPServer(server_name, instructions=INSTRUCTIONS[kind])
    read_only = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=True)
    for tool, fn in TOOLSETS[kind].items():
        server.add_tool(_answering(fn, f"{server_name}.{tool}", fixtures, idle, state), annotations=read_only,
                        structured_output=False)
    if write and kind == ACTION_TOOLSET:
        changes = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=True)
        for tool, fn in ACTION_TOOLS.items():
            server.add_tool(_answering(fn, f"{server_name}.{tool}", fixtures, idle, state, action=True),
                            annotations=changes, structured_output=False)
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", required=True, type=Path, help="the scenario's tools.yaml")
    parser.add_argument("--server", required=True, help="the logical server name the fixtures are keyed by")
    parser.add_argument("--idle-exit", type=float, default=0, metavar="S", help="exit after S seconds without a call")
    parser.add_argument("--write", action="store_true", help="also offer the action tools (write mode)")
    parser.add_argument("--state", type=Path, help="the run's file of action calls that ran (JSON lines)")
    args = parser.parse_args(argv)
    idle = IdleExit(args.idle_exit) if args.idle_exit > 0 else None
    server = build_server(load_tools(args.tools), args.server, idle, write=args.write, state=args.state)
    if idle is not None:
        idle.start()
    server.run()


if __name__ == "__main__":
    main()
