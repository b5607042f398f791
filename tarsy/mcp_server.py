"""The built-in `tarsy` MCP server: an agent's own look into past investigations, for ReAct and native alike.

Tools: `recall_past_investigations(query)` (investigation memory) and `search_past_sessions(query, alert_type?,
since?)` (completed sessions), answering masked snippets with memory ids and session links. Run as
`python -m tarsy.mcp_server` (stdio): the built-in server `tarsy` starts it for agents that list it in their
`mcp_servers`, passing it the database settings (agents.config.builtins). The ORM is called through asgiref's
`sync_to_async`, as the server's tools run on its event loop. The server's `load_skill` tool is answered
in-process by the agent's tool executor instead (agents.mcp.skill_tool says why).

The orchestrator's tools of the same `tarsy` namespace (`dispatch_agent`, `list_agents`, `cancel_agent`) are not
served here either: they act on the calling execution (its stage, depth, guardrails, and the iteration whose
completion creates the sub-agents), which this shared process does not know, so the worker answers them
in-process (tarsy.pipeline.sub_agents).
"""

from __future__ import annotations

import os
from typing import Any

SERVER_NAME = "tarsy"
INSTRUCTIONS = ("TARSy's memory of past investigations. Before a deep investigation, recall what earlier ones "
                "learned about this service or symptom; verify what you recall with the other tools, and cite a "
                "memory you rely on by its id ([M12]).")


def build_server() -> Any:
    """The MCP server (imports inside: building an MCPServer reconfigures root logging)."""
    from asgiref.sync import sync_to_async
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from tarsy.pipeline.memory import tools

    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)

    async def call(fn, *args: Any) -> str:
        try:
            return await sync_to_async(fn)(*args)
        except tools.ToolInputError as exc:
            raise ToolError(str(exc)) from exc

    @server.tool(annotations=read_only, structured_output=False)
    async def recall_past_investigations(query: str) -> str:
        """What TARSy learned from past investigations matching the query (a service, symptom, error or
        resource): facts about the environment, confirmed causes and fixes, what to check first. Each memory has
        an id to cite, its confidence and the session it came from."""
        return await call(tools.recall_past_investigations, query)

    @server.tool(annotations=read_only, structured_output=False)
    async def search_past_sessions(query: str, alert_type: str = "", since: str = "") -> str:
        """Completed investigations whose alert, analysis or timeline match the query (a few distinctive words),
        newest first, with their conclusion, review and link. `alert_type` narrows to one alert type; `since` to
        sessions created after an ISO date or an age such as 7d or 12h."""
        return await call(tools.search_past_sessions, query, alert_type, since)

    return server


def main() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarsy.settings.base")  # neither web nor worker
    django.setup()
    build_server().run()


if __name__ == "__main__":
    main()
