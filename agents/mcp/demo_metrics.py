"""A demo metrics MCP server over the demo cluster: the Prometheus a metrics agent queries under `make run`.

Tools are named and shaped like prometheus-mcp-server 1.5.3 (`execute_query` answers the Prometheus API's
`{"resultType", "result"}` JSON, `list_metrics` a JSON list of names), so prompts and the demo investigator
behave as they would against a real Prometheus. Its series are derived from the demo cluster's pods
(`demo_cluster_data`): restart counts, the last termination reason, memory working set against the limit
(an OOMKilled container sits at its limit) and CFS throttling (the `search` pods at their 250m CPU limit).
Queries: a selector (`name{label="v", label!="v", label=~"re"}`), `rate(selector[window])`, or one division
of two of those whose series match on their labels. Run it with `python -m agents.mcp.demo_metrics` (stdio).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from . import demo_cluster_data as data
from .demo_cluster import read_only_server

SERVER_NAME = "demo-metrics"
INSTRUCTIONS = "PromQL over a demonstration Prometheus scraping the demo cluster (kube-state-metrics, cAdvisor)."
SCRAPE_TIME = data.NOW.timestamp()  # every sample is "now" in the demo cluster's fixed time
CFS_PERIODS_PER_S = 10.0  # the kernel's default CFS period is 100ms
THROTTLED_SHARE = 0.92  # the `search` pods: throttled in most periods at their 250m limit (their logs say 91-94%)
IDLE_THROTTLED_SHARE = 0.01
OOM_WORKING_SET = 0.98  # an OOMKilled container grows to its limit before the kernel kills it
WORKING_SET = 0.42  # everyone else: comfortably under the limit
UNLIMITED_WORKING_SET = 48 * 2**20
_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
_SELECTOR = re.compile(r"^\s*(?P<name>[a-zA-Z_:][\w:]*)\s*(?:\{(?P<matchers>[^}]*)\})?\s*$")
_MATCHER = re.compile(r'\s*(?P<label>[a-zA-Z_]\w*)\s*(?P<op>=~|!=|=)\s*"(?P<value>[^"]*)"\s*(?:,|$)')
_RATE = re.compile(r"^\s*rate\(\s*(?P<selector>.+?)\s*\[(?P<window>\d+[smh])\]\s*\)\s*$")
COUNTERS = ("kube_pod_container_status_restarts_total", "container_cpu_cfs_periods_total",
            "container_cpu_cfs_throttled_periods_total")


def _fail(message: str) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    raise ToolError(message)


def _bytes(quantity: str) -> float:
    for suffix, factor in _UNITS.items():
        if quantity.endswith(suffix):
            return float(quantity[: -len(suffix)]) * factor
    return float(quantity)


def _cores(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def _age_s(pod: dict[str, Any]) -> float:
    started = pod["metadata"]["creationTimestamp"]
    return max(60.0, SCRAPE_TIME - datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=data.NOW.tzinfo).timestamp())


def _container_series(pod: dict[str, Any], spec: dict[str, Any], status: dict[str, Any]) -> list[tuple[dict, float]]:
    """(labels, value) of every series one container has; counters carry their per-second rate as `_rate`."""
    base = {"namespace": pod["metadata"]["namespace"], "pod": pod["metadata"]["name"], "container": spec["name"]}
    limits = (spec.get("resources") or {}).get("limits") or {}
    last = status.get("lastState", {}).get("terminated") or {}
    oom = last.get("reason") == "OOMKilled"
    memory_limit = _bytes(limits["memory"]) if "memory" in limits else None
    working_set = memory_limit * (OOM_WORKING_SET if oom else WORKING_SET) if memory_limit else UNLIMITED_WORKING_SET
    throttled = THROTTLED_SHARE if (base["namespace"] == "search" and limits.get("cpu") == data.THROTTLED_CPU_LIMIT) \
        else IDLE_THROTTLED_SHARE
    age, restarts = _age_s(pod), float(status.get("restartCount", 0))
    series = [
        ({"__name__": "kube_pod_container_status_restarts_total", **base, "_rate": restarts / age}, restarts),
        ({"__name__": "container_memory_working_set_bytes", **base}, round(working_set)),
    ]
    if last.get("reason"):
        series.append(({"__name__": "kube_pod_container_status_last_terminated_reason", **base,
                        "reason": last["reason"]}, 1.0))
    if memory_limit:
        series.append(({"__name__": "kube_pod_container_resource_limits", **base, "resource": "memory",
                        "unit": "byte"}, memory_limit))
    if "cpu" in limits:
        series.append(({"__name__": "kube_pod_container_resource_limits", **base, "resource": "cpu",
                        "unit": "core"}, _cores(limits["cpu"])))
        periods = CFS_PERIODS_PER_S * age
        series += [
            ({"__name__": "container_cpu_cfs_periods_total", **base, "_rate": CFS_PERIODS_PER_S}, round(periods)),
            ({"__name__": "container_cpu_cfs_throttled_periods_total", **base,
              "_rate": CFS_PERIODS_PER_S * throttled}, round(periods * throttled)),
        ]
    return series


def all_series() -> list[tuple[dict, float]]:
    return [s for pod in data.PODS for spec, status in zip(pod["spec"]["containers"],
                                                             pod["status"]["containerStatuses"], strict=False)
            for s in _container_series(pod, spec, status)]


def _matchers(text: str) -> list[tuple[str, str, str]]:
    found, position = [], 0
    while position < len(text.strip()):
        match = _MATCHER.match(text, position)
        if match is None:
            _fail(f"bad_data: invalid parameter \"query\": unexpected character in label matchers: {text[position:]!r}")
            raise AssertionError("unreachable")
        found.append((match["label"], match["op"], match["value"]))
        position = match.end()
    return found


def _select(selector: str) -> list[tuple[dict, float]]:
    match = _SELECTOR.match(selector)
    if match is None:
        _fail(f"bad_data: invalid parameter \"query\": the demo Prometheus answers selectors, rate() and one "
              f"division, not {selector.strip()!r}")
        raise AssertionError("unreachable")
    terms = _matchers(match["matchers"] or "")

    def keep(labels: dict) -> bool:
        for label, op, value in terms:
            have = str(labels.get(label, ""))
            if (op == "=" and have != value) or (op == "!=" and have == value) or (
                    op == "=~" and not re.fullmatch(value, have)):
                return False
        return True

    return [(labels, value) for labels, value in all_series() if labels["__name__"] == match["name"] and keep(labels)]


def _evaluate(expression: str) -> list[tuple[dict, float]]:
    rate = _RATE.match(expression)
    if rate is None:
        return _select(expression)
    selected = _select(rate["selector"])
    if any(labels["__name__"] not in COUNTERS for labels, _ in selected):
        _fail("bad_data: rate() needs a counter; the demo's counters are " + ", ".join(COUNTERS))
    return [({k: v for k, v in labels.items() if k != "__name__"}, labels["_rate"]) for labels, _ in selected]


def _key(labels: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in labels.items() if k not in ("__name__", "_rate")))


def _divide(left: str, right: str) -> list[tuple[dict, float]]:
    """One-to-one vector matching: series with the same labels (the metric name aside)."""
    divisors = {_key(labels): value for labels, value in _evaluate(right)}
    return [({k: v for k, v in labels.items() if k != "__name__"}, value / divisors[_key(labels)])
            for labels, value in _evaluate(left) if divisors.get(_key(labels))]


def _sample(labels: dict, value: float) -> dict[str, Any]:
    shown = {k: v for k, v in labels.items() if k != "_rate"}
    return {"metric": shown, "value": [SCRAPE_TIME, f"{value:.10g}"]}


def execute_query(
    query: Annotated[str, Field(description="PromQL query string")],
    time: Annotated[str | None, Field(description="Optional RFC3339 or Unix timestamp (default: current time)")] = None,
) -> str:
    """Execute a PromQL instant query against Prometheus"""
    left, slash, right = query.partition(" / ")
    result = _divide(left, right) if slash else _evaluate(query)
    return json.dumps({"resultType": "vector", "result": [_sample(labels, value) for labels, value in result]})


def list_metrics() -> str:
    """List all available metrics in Prometheus"""
    return json.dumps(sorted({labels["__name__"] for labels, _ in all_series()}))


TOOLS = (execute_query, list_metrics)


def build_server() -> Any:
    return read_only_server(SERVER_NAME, INSTRUCTIONS, TOOLS)


if __name__ == "__main__":
    build_server().run()
