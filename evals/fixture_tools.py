"""The tools the fixture servers offer: names, descriptions and input schemas of real MCP servers.

Two tool sets, one per kind of server a scenario records:

- `kubernetes`: kubernetes-mcp-server — the demo cluster's tools (`agents.mcp.demo_cluster.TOOLS`) plus
  `pods_top` and `nodes_top`, which read the Metrics Server;
- `prometheus`: pab1it0/prometheus-mcp-server — instant and range PromQL queries, metric names and metadata,
  scrape targets.

kubernetes-mcp-server in write mode (without `--read-only`) adds tools that change the cluster (`ACTION_TOOLS`):
a Kubernetes fixture server offers them only when run as an action server (`--write`), for the action scenarios.

The functions below only declare a tool (the fixture server takes the signature as the schema and answers
from `tools.yaml`), so their bodies are never run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from agents.mcp import demo_cluster

LabelSelector = Annotated[str, Field(
    description="Kubernetes label selector (e.g. 'app=myapp,env=prod' or 'app in (myapp,yourapp)'), use this option "
                "when you want to filter the pods by label (Optional, only applicable when name is not provided)")]


def _declared(*_: object, **__: object) -> str:
    raise RuntimeError("a fixture tool is answered from tools.yaml, never run")


def pods_top(
    all_namespaces: Annotated[bool, Field(
        description="If true, list the resource consumption for all Pods in all namespaces. If false, list the "
                    "resource consumption for Pods in the provided namespace or the current namespace")] = True,
    namespace: Annotated[str, Field(
        description="Namespace to get the Pods resource consumption from (Optional, current namespace if not "
                    "provided and all_namespaces is false)")] = "",
    name: Annotated[str, Field(
        description="Name of the Pod to get the resource consumption from (Optional, all Pods in the namespace if "
                    "not provided)")] = "",
    label_selector: LabelSelector = "",
) -> str:
    """List the resource consumption (CPU and memory) as recorded by the Kubernetes Metrics Server for the specified
    Kubernetes Pods in the all namespaces, the provided namespace, or the current namespace"""
    return _declared()


def nodes_top(
    name: Annotated[str, Field(
        description="Name of the Node to get the resource consumption from (Optional, all Nodes if not provided)",
    )] = "",
    label_selector: Annotated[str, Field(
        description="Kubernetes label selector (e.g. 'node-role.kubernetes.io/worker=') to filter nodes by label "
                    "(Optional, only applicable when name is not provided)")] = "",
) -> str:
    """List the resource consumption (CPU and memory) as recorded by the Kubernetes Metrics Server for the specified
    Kubernetes Nodes or all nodes in the cluster"""
    return _declared()


def execute_query(
    query: Annotated[str, Field(description="PromQL query string")],
    time: Annotated[str | None, Field(description="Optional RFC3339 or Unix timestamp (default: current time)")] = None,
) -> str:
    """Execute a PromQL instant query against Prometheus"""
    return _declared()


def execute_range_query(
    query: Annotated[str, Field(description="PromQL query string")],
    start: Annotated[str, Field(description="Start time as RFC3339 or Unix timestamp")],
    end: Annotated[str, Field(description="End time as RFC3339 or Unix timestamp")],
    step: Annotated[str, Field(description="Query resolution step width (e.g., '15s', '1m', '1h')")],
) -> str:
    """Execute a PromQL range query with start time, end time, and step interval"""
    return _declared()


def list_metrics() -> str:
    """List all available metrics in Prometheus"""
    return _declared()


def get_metric_metadata(metric: Annotated[str, Field(description="The name of the metric to retrieve metadata for")],
                        ) -> str:
    """Get metadata for a specific metric"""
    return _declared()


def get_targets() -> str:
    """Get information about all scrape targets"""
    return _declared()


def resources_scale(
    apiVersion: Annotated[str, Field(description="apiVersion of the resource (e.g. apps/v1)")],  # noqa: N803
    kind: Annotated[str, Field(description="kind of the resource (e.g. Deployment, StatefulSet)")],
    name: Annotated[str, Field(description="Name of the resource")],
    namespace: Annotated[str, Field(description="Namespace of the resource")] = "",
    scale: Annotated[int | None, Field(description="The number of replicas to scale the resource to (Optional, the "
                                                   "current scale is returned if not provided)")] = None,
) -> str:
    """Get or update the scale of a Kubernetes resource in the current cluster by providing its apiVersion, kind,
    name, and optionally the namespace and the scale"""
    return _declared()


def pods_delete(
    name: Annotated[str, Field(description="Name of the Pod to delete")],
    namespace: Annotated[str, Field(description="Namespace to delete the Pod from")] = "",
) -> str:
    """Delete a Kubernetes Pod in the current or provided namespace with the provided name"""
    return _declared()


def resources_create_or_update(
    resource: Annotated[str, Field(description="A JSON or YAML containing a representation of the Kubernetes "
                                               "resource. Should include top-level fields such as apiVersion, kind, "
                                               "metadata, and spec")],
) -> str:
    """Create or update a Kubernetes resource in the current cluster by providing a YAML or JSON representation of
    the resource"""
    return _declared()


def _by_name(*fns: Callable[..., str]) -> dict[str, Callable[..., str]]:
    return {fn.__name__: fn for fn in fns}


TOOLSETS: dict[str, dict[str, Callable[..., str]]] = {
    "kubernetes": _by_name(*demo_cluster.TOOLS, pods_top, nodes_top),
    "prometheus": _by_name(execute_query, execute_range_query, list_metrics, get_metric_metadata, get_targets),
}
ACTION_TOOLS: dict[str, Callable[..., str]] = _by_name(resources_scale, pods_delete, resources_create_or_update)
ACTION_TOOLSET = "kubernetes"  # the kind of server whose write mode offers them
INSTRUCTIONS = {
    "kubernetes": "Read-only tools over a Kubernetes cluster (namespaces, pods, logs, events, resources, usage).",
    "prometheus": "PromQL queries (instant and range), metric names and metadata, and scrape targets of Prometheus.",
}
TOOLS: dict[str, Callable[..., str]] = {**{name: fn for tools in TOOLSETS.values() for name, fn in tools.items()},
                                        **ACTION_TOOLS}
TOOLSET_OF: dict[str, str] = {**{name: kind for kind, tools in TOOLSETS.items() for name in tools},
                              **dict.fromkeys(ACTION_TOOLS, ACTION_TOOLSET)}
