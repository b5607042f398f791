"""A write-mode Kubernetes-shaped MCP server whose deployments live in a JSON file: `resources_scale` changes what
`resources_get` returns next, so an approved action's verification can pass, or fail (a deployment whose
`max_ready` caps the replicas that become ready, like a namespace out of quota).

Run: `python deployments_file_server.py STATE.json` (stdio). The file holds
`{"<namespace>/<name>": {"replicas": int, "max_ready": int | null, "scale_delay_s": float (optional)}}`; a
`scale_delay_s` makes a scale take that long before it changes anything (a worker can die in the middle).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer


def write_state(path: Path, state: dict[str, Any]) -> None:
    """Replace the file in one rename, so a call never reads half of it."""
    staged = path.with_suffix(".tmp")
    staged.write_text(json.dumps(state))
    staged.replace(path)


def read_state(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def build_server(path: Path) -> MCPServer:
    server = MCPServer("deployments-file", instructions="Deployments of a test cluster (write mode).",
                       log_level="WARNING")

    def shown(key: str, spec: dict[str, Any]) -> str:
        namespace, name = key.split("/", 1)
        cap = spec.get("max_ready")
        ready = spec["replicas"] if cap is None else min(spec["replicas"], cap)
        return (f"kind: Deployment\nname: {name}\nnamespace: {namespace}\nreplicas: {spec['replicas']}\n"
                f"readyReplicas: {ready}\n")

    @server.tool()
    def resources_get(namespace: str, name: str) -> str:
        """Get a Deployment in a namespace."""
        key = f"{namespace}/{name}"
        state = read_state(path)
        return shown(key, state[key]) if key in state else f"deployments.apps {name!r} not found"

    @server.tool()
    def resources_scale(namespace: str, name: str, replicas: int) -> str:
        """Scale a Deployment to a number of replicas."""
        key = f"{namespace}/{name}"
        state = read_state(path)
        if key not in state:
            raise ValueError(f"deployments.apps {name!r} not found")
        time.sleep(state[key].get("scale_delay_s") or 0)
        state[key]["replicas"] = replicas
        write_state(path, state)
        return f"deployment.apps/{name} scaled to {replicas}"

    return server


if __name__ == "__main__":
    build_server(Path(sys.argv[1])).run()
