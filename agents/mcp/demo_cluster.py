"""A demo Kubernetes MCP server over a fake, internally consistent cluster.

Tools are named and shaped like kubernetes-mcp-server 0.0.54 (lists as
kubectl-style tables, single objects and events as YAML), so the prompts and
the demo investigator behave as they would against a real cluster. Run it with
`python -m agents.mcp.demo_cluster` (stdio). Data lives in `demo_cluster_data`.
"""

from __future__ import annotations

import copy
import sys
from datetime import datetime, timedelta
from typing import Annotated, Any

import yaml
from pydantic import Field

from . import demo_cluster_data as data
from . import demo_cluster_writes as writes

SERVER_NAME = "demo-kubernetes"
DEFAULT_TAIL_LINES = 100  # kubernetes-mcp-server's default; keeps a chatty pod from flooding the context
INSTRUCTIONS = "Read-only tools over a demonstration Kubernetes cluster (namespaces, pods, logs, events, resources)."
ACTIONS_SERVER_NAME = "demo-kubernetes-actions"
ACTIONS_INSTRUCTIONS = ("The demonstration Kubernetes cluster with write tools (scale, set limits, rollout restart and "
                        "undo): read its state, and propose the change that fixes what the investigation found.")


# ---- formatting -------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as `|` blocks, as kubectl prints them (embedded configs stay readable)."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def to_yaml(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True, width=4096)


def age(timestamp: str) -> str:
    """kubectl's short duration: 40s, 52m, 3d5h, 41d."""
    delta = data.NOW - datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=data.NOW.tzinfo)
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 3 * 3600:
        return f"{seconds // 60}m"
    hours = seconds // 3600
    if hours < 48:
        return f"{hours}h"
    days, rest = divmod(hours, 24)
    return f"{days}d{rest}h" if days < 8 and rest else f"{days}d"


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["   ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [headers, *rows]]
    return "\n".join(lines) + "\n"


def _labels(obj: dict[str, Any]) -> str:
    labels = obj["metadata"].get("labels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def pod_status(pod: dict[str, Any]) -> tuple[str, str, str]:
    """(READY, STATUS, RESTARTS) the way `kubectl get pods` computes them (a pod-level reason, e.g. Evicted, wins)."""
    statuses = pod["status"].get("containerStatuses", [])
    ready = sum(1 for s in statuses if s.get("ready"))
    status = pod["status"].get("reason") or pod["status"]["phase"]
    for s in statuses if not pod["status"].get("reason") else ():
        state = s.get("state", {})
        if "waiting" in state:
            status = state["waiting"]["reason"]
        elif "terminated" in state:
            status = state["terminated"]["reason"]
    restarts = sum(s.get("restartCount", 0) for s in statuses)
    restart_text = str(restarts)
    finished = [s["lastState"]["terminated"]["finishedAt"] for s in statuses if "terminated" in s.get("lastState", {})]
    if restarts and finished:
        restart_text += f" ({age(max(finished))} ago)"
    return f"{ready}/{len(statuses)}", status, restart_text


def pods_table(pods: list[dict[str, Any]]) -> str:
    headers = ["NAMESPACE", "APIVERSION", "KIND", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "LABELS"]
    rows = []
    for pod in pods:
        ready, status, restarts = pod_status(pod)
        meta = pod["metadata"]
        rows.append(
            [
                meta["namespace"],
                "v1",
                "Pod",
                meta["name"],
                ready,
                status,
                restarts,
                age(meta["creationTimestamp"]),
                pod["status"]["podIP"],
                pod["spec"]["nodeName"],
                _labels(pod),
            ]
        )
    return table(headers, rows)


def _kind_columns(obj: dict[str, Any]) -> tuple[list[str], list[str]]:
    kind = obj["kind"]
    if kind in ("Deployment", "StatefulSet"):
        spec, status = obj["spec"], obj["status"]
        return ["READY"], [f"{status.get('readyReplicas', 0)}/{spec['replicas']}"]
    if kind == "Secret":
        return ["TYPE", "DATA"], [obj.get("type", "Opaque"), str(len(obj.get("data", {})))]
    if kind == "ConfigMap":
        return ["DATA"], [str(len(obj.get("data", {})))]
    if kind == "Service":
        return ["TYPE", "CLUSTER-IP"], [obj["spec"]["type"], obj["spec"]["clusterIP"]]
    if kind in ("Namespace",):
        return ["STATUS"], [obj["status"]["phase"]]
    if kind == "Node":
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in obj["status"]["conditions"])
        return ["STATUS"], ["Ready" if ready else "NotReady"]
    return [], []


def resources_table(objects: list[dict[str, Any]], namespaced: bool) -> str:
    if not objects:
        return "No resources found\n"
    extra_headers, _ = _kind_columns(objects[0])
    headers = (["NAMESPACE"] if namespaced else []) + ["APIVERSION", "KIND", "NAME", *extra_headers, "AGE", "LABELS"]
    rows = []
    for obj in objects:
        meta = obj["metadata"]
        _, extra = _kind_columns(obj)
        ns = [meta.get("namespace", "")] if namespaced else []
        rows.append(
            [*ns, obj["apiVersion"], obj["kind"], meta["name"], *extra, age(meta["creationTimestamp"]), _labels(obj)]
        )
    return table(headers, rows)


# ---- queries ----------------------------------------------------------------------------------


def _fail(message: str) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    raise ToolError(message)


def _matches(obj: dict[str, Any], selector: str) -> bool:
    """Equality, inequality and existence label selectors (`app=web,tier!=db,release`)."""
    labels = obj["metadata"].get("labels") or {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = (p.strip() for p in term.split("!=", 1))
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = (p.strip() for p in term.replace("==", "=").split("=", 1))
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _check_namespace(namespace: str) -> None:
    if namespace not in data.NAMESPACES:
        _fail(f'namespaces "{namespace}" not found')


def _find(api_version: str, kind: str) -> list[dict[str, Any]]:
    writes.sync()
    objects = data.RESOURCES.get((api_version, kind))
    if objects is None:
        _fail(f'the server doesn\'t have a resource type "{kind}" in group version "{api_version}"')
    return objects or []


def _get_pod(namespace: str, name: str) -> dict[str, Any]:
    writes.sync()
    _check_namespace(namespace)
    for pod in data.PODS:
        if pod["metadata"]["namespace"] == namespace and pod["metadata"]["name"] == name:
            return pod
    _fail(f'failed to get pod {name} in namespace {namespace}: pods "{name}" not found')
    raise AssertionError("unreachable")


def _generic_log(pod: dict[str, Any]) -> str:
    started = datetime.strptime(pod["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    name = pod["spec"]["containers"][0]["name"]
    lines = [
        f"{(started + timedelta(seconds=3)).isoformat()}Z INFO  {name} started",
        f"{(started + timedelta(seconds=4)).isoformat()}Z INFO  ready to serve requests",
    ]
    lines += [
        f"{(data.NOW - timedelta(minutes=m)).strftime('%Y-%m-%dT%H:%M:%S')}Z INFO  health check ok" for m in (15, 10, 5)
    ]
    return "\n".join(lines) + "\n"


# ---- tools ------------------------------------------------------------------------------------

Namespace = Annotated[str, Field(description="Namespace (optional, current namespace 'default' if not provided)")]
Selector = Annotated[
    str, Field(description="Optional Kubernetes label selector (e.g. 'app=myapp,env=prod'), to filter by label")
]


def namespaces_list() -> str:
    """List all the Kubernetes namespaces in the current cluster."""
    writes.sync()
    return resources_table(data.RESOURCES[("v1", "Namespace")], namespaced=False)


def pods_list(labelSelector: Selector = "") -> str:  # noqa: N803 - the real server's argument name
    """List all the Kubernetes pods in the current cluster from all namespaces."""
    writes.sync()
    return pods_table([p for p in data.PODS if _matches(p, labelSelector)])


def pods_list_in_namespace(
    namespace: Annotated[str, Field(description="Namespace to list pods from")],
    labelSelector: Selector = "",  # noqa: N803
) -> str:
    """List all the Kubernetes pods in the specified namespace in the current cluster."""
    writes.sync()
    _check_namespace(namespace)
    pods = [p for p in data.PODS if p["metadata"]["namespace"] == namespace and _matches(p, labelSelector)]
    return pods_table(pods) if pods else f"No resources found in {namespace} namespace.\n"


def pods_get(
    name: Annotated[str, Field(description="Name of the Pod")],
    namespace: Namespace = "default",
) -> str:
    """Get a Kubernetes Pod in the current or provided namespace with the provided name."""
    return to_yaml(_get_pod(namespace or "default", name))


def pods_log(
    name: Annotated[str, Field(description="Name of the Pod to get the logs from")],
    namespace: Namespace = "default",
    container: Annotated[str, Field(description="Name of the Pod container to get the logs from (Optional)")] = "",
    previous: Annotated[bool, Field(description="Return previous terminated container logs (Optional)")] = False,
    tail: Annotated[int, Field(description="Number of lines to retrieve from the end of the logs", ge=0)] = (
        DEFAULT_TAIL_LINES
    ),
) -> str:
    """Get the logs of a Kubernetes Pod in the current or provided namespace with the provided name."""
    namespace = namespace or "default"
    pod = _get_pod(namespace, name)
    names = [c["name"] for c in pod["spec"]["containers"]]
    if container and container not in names:
        _fail(f"container {container} is not valid for pod {name}")
    status = pod["status"]["containerStatuses"][0]
    if previous and "terminated" not in status.get("lastState", {}):
        _fail(f'previous terminated container "{names[0]}" in pod "{name}" not found')
    waiting = status.get("state", {}).get("waiting")
    if not previous and waiting and not status.get("restartCount"):
        _fail(f'container "{names[0]}" in pod "{name}" is waiting to start: {waiting["reason"]}')
    if pod["status"].get("reason") == "Evicted":
        _fail(f"unable to retrieve container logs for {status['containerID']}: the pod was evicted")
    text = data.LOGS.get((namespace, name, previous)) or _generic_log(pod)
    lines = text.splitlines()[-tail:] if tail else text.splitlines()
    return "\n".join(lines) + "\n"


def events_list(
    namespace: Annotated[
        str, Field(description="Optional Namespace to retrieve the events from. If not provided, lists all namespaces")
    ] = "",
) -> str:
    """List Kubernetes events (warnings, errors, state changes) for debugging and troubleshooting."""
    writes.sync()
    if namespace:
        _check_namespace(namespace)
    events = sorted(
        (e for e in data.EVENTS if not namespace or e["Namespace"] == namespace), key=lambda e: e["Timestamp"]
    )
    if not events:
        return "# No events found"
    return "# The following events (YAML format) were found:\n" + to_yaml(events)


def resources_list(
    apiVersion: Annotated[str, Field(description="apiVersion of the resources (e.g. v1, apps/v1)")],  # noqa: N803
    kind: Annotated[str, Field(description="kind of the resources (e.g. Pod, Deployment, Secret)")],
    namespace: Annotated[str, Field(description="Optional Namespace; all namespaces if not provided")] = "",
    labelSelector: Selector = "",  # noqa: N803
) -> str:
    """List Kubernetes resources and objects in the current cluster by providing their apiVersion and kind."""
    objects = _find(apiVersion, kind)
    if namespace:
        _check_namespace(namespace)
    namespaced = any("namespace" in o["metadata"] for o in objects)
    selected = [
        o
        for o in objects
        if (not namespace or o["metadata"].get("namespace") == namespace) and _matches(o, labelSelector)
    ]
    return resources_table(selected, namespaced)


def resources_get(
    apiVersion: Annotated[str, Field(description="apiVersion of the resource (e.g. v1, apps/v1)")],  # noqa: N803
    kind: Annotated[str, Field(description="kind of the resource (e.g. Pod, Deployment, Secret)")],
    name: Annotated[str, Field(description="Name of the resource")],
    namespace: Annotated[str, Field(description="Optional Namespace; current namespace if not provided")] = "",
) -> str:
    """Get a Kubernetes resource in the current cluster by providing its apiVersion, kind, name and namespace."""
    objects = _find(apiVersion, kind)
    namespaced = any("namespace" in o["metadata"] for o in objects)
    namespace = (namespace or "default") if namespaced else ""
    if namespace:
        _check_namespace(namespace)
    for obj in objects:
        if obj["metadata"]["name"] == name and obj["metadata"].get("namespace", "") == namespace:
            return to_yaml(copy.deepcopy(obj))
    plural = kind.lower() + "s"
    _fail(f'{plural} "{name}" not found' + (f" in namespace {namespace}" if namespace else ""))
    raise AssertionError("unreachable")


TOOLS = (
    namespaces_list,
    pods_list,
    pods_list_in_namespace,
    pods_get,
    pods_log,
    events_list,
    resources_list,
    resources_get,
)


def read_only_server(name: str, instructions: str, tools: tuple[Any, ...]) -> Any:
    """An MCP server offering `tools` as read-only (import inside: building an MCPServer reconfigures root
    logging). The demo servers (this one and demo_metrics) are built alike."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer(name, instructions=instructions)
    read_only = ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=True)
    for fn in tools:
        server.add_tool(fn, annotations=read_only, structured_output=False)
    return server


def build_server(actions: bool = False) -> Any:
    """The read-only server; with `actions`, the same cluster with its write tools as well (for action agents)."""
    if not actions:
        return read_only_server(SERVER_NAME, INSTRUCTIONS, TOOLS)
    from mcp.types import ToolAnnotations

    server = read_only_server(ACTIONS_SERVER_NAME, ACTIONS_INSTRUCTIONS, TOOLS)
    changes = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True)
    for fn in writes.TOOLS:
        server.add_tool(fn, annotations=changes, structured_output=False)
    return server


if __name__ == "__main__":
    build_server(actions="--actions" in sys.argv[1:]).run()
