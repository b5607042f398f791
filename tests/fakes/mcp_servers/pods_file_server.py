"""A Kubernetes-shaped MCP server whose pods are read from a JSON file at every call: a test changes the
cluster between two calls by rewriting the file (a proactive check's fixture, flipped from healthy to failing).

Run: `python pods_file_server.py PODS.json` (stdio). The file holds a list of
`{"namespace", "name", "ready", "status", "restarts"}`; tools `pods_list` and `pods_list_in_namespace` answer
with the kubectl-style table kubernetes-mcp-server prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

HEADERS = ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS"]


def write_pods(path: Path, pods: list[dict[str, Any]]) -> None:
    """Replace the file in one rename, so a call never reads half of it."""
    staged = path.with_suffix(".tmp")
    staged.write_text(json.dumps(pods))
    staged.replace(path)


def _table(pods: list[dict[str, Any]]) -> str:
    rows = [HEADERS, *([p["namespace"], p["name"], p["ready"], p["status"], str(p["restarts"])] for p in pods)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    return "\n".join("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows) + "\n"


def build_server(path: Path) -> MCPServer:
    server = MCPServer("pods-file", instructions="Pods of a test cluster.", log_level="WARNING")

    def pods() -> list[dict[str, Any]]:
        return json.loads(path.read_text())

    @server.tool()
    def pods_list() -> str:
        """List all the Kubernetes pods in the current cluster from all namespaces."""
        return _table(pods())

    @server.tool()
    def pods_list_in_namespace(namespace: str) -> str:
        """List all the Kubernetes pods in the specified namespace in the current cluster."""
        rows = [p for p in pods() if p["namespace"] == namespace]
        return _table(rows) if rows else f"No resources found in {namespace} namespace.\n"

    return server


if __name__ == "__main__":
    build_server(Path(sys.argv[1])).run()
