"""A write-mode Kubernetes-shaped MCP server whose deployments live in a JSON file: `resources_scale` changes what
`resources_get` returns next, so an approved action's verification can pass, or fail (a deployment whose
`max_ready` caps the replicas that become ready, like a namespace out of quota). `resources_scale` with
`dryRun: server` answers the diff it would make and changes nothing (kubectl's `--dry-run=server`).

Run: `python deployments_file_server.py STATE.json` (stdio). The file holds
`{"<namespace>/<name>": {"replicas": int, "max_ready": int | null, "restarts": int, "scale_delay_s": float}}`
("restarts", "scale_delay_s" and "warning" optional); a `scale_delay_s` makes a scale take that long before it
changes anything (a worker can die in the middle); a `warning` is printed ahead of a scale's answer, as kubectl
prints an admission webhook's warnings (text from outside: the injection tests put orders in it).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def write_state(path: Path, state: dict[str, Any]) -> None:
    """Replace the file in one rename, so a call never reads half of it."""
    staged = path.with_suffix(".tmp")
    staged.write_text(json.dumps(state))
    staged.replace(path)


def read_state(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _diff(resource: str, before: dict[str, Any], after: dict[str, Any]) -> str:
    """A dry run's answer: the fields the change would set, before and after, as a unified diff."""
    lines = [f"--- {resource} (live)", f"+++ {resource} (dry run: server)", "@@ spec @@"]
    for field, old in before.items():
        new = after[field]
        lines += [f" {field}: {old}"] if new == old else [f"-{field}: {old}", f"+{field}: {new}"]
    return "\n".join(lines) + "\n"


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
    def resources_scale(namespace: str, name: str, replicas: int, dryRun: str = "") -> str:  # noqa: N803 - the wire name
        """Scale a Deployment to a number of replicas. dryRun "server": show what would change, change nothing."""
        key = f"{namespace}/{name}"
        state = read_state(path)
        if key not in state:
            raise ToolError(f"deployments.apps {name!r} not found")
        if dryRun not in ("", "server"):
            raise ToolError(f"dryRun must be 'server' or empty, not {dryRun!r}")
        if dryRun:
            return _diff(f"deployment.apps/{name}", {"replicas": state[key]["replicas"]}, {"replicas": replicas})
        time.sleep(state[key].get("scale_delay_s") or 0)
        state[key]["replicas"] = replicas
        write_state(path, state)
        warning = f"Warning: {state[key]['warning']}\n" if state[key].get("warning") else ""
        return f"{warning}deployment.apps/{name} scaled to {replicas}"

    @server.tool()
    def rollout_restart(namespace: str, name: str) -> str:
        """Restart a Deployment's pods (no dry run)."""
        key = f"{namespace}/{name}"
        state = read_state(path)
        if key not in state:
            raise ToolError(f"deployments.apps {name!r} not found")
        state[key]["restarts"] = state[key].get("restarts", 0) + 1
        write_state(path, state)
        return f"deployment.apps/{name} restarted"

    return server


if __name__ == "__main__":
    build_server(Path(sys.argv[1])).run()
