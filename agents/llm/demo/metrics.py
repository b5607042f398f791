"""The demo investigator as a metrics agent: where a Prometheus-shaped `execute_query` is offered, it finds the
alert's pod (pods_list), asks the metrics a few questions about it and reports what they show, citing each result.

Questions: restarts, the last termination reason, memory working set against the limit, CPU throttling. The
answers are the Prometheus API's `{"resultType": "vector", "result": [...]}` (the demo metrics server's, or a real
one's through prometheus-mcp-server).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .evidence import Conversation
from .findings import Findings
from .investigator import LABEL, Action

MEMORY_SATURATED = 0.9  # working set at 90% of the limit: the next allocation spike is an OOM kill
CPU_STARVED = 0.5  # throttled in half the CFS periods: requests queue behind the quota
QUERIES = (
    ("restarts", "kube_pod_container_status_restarts_total{{{sel}}}", "How often has {pod} restarted?"),
    ("terminated", "kube_pod_container_status_last_terminated_reason{{{sel}}}", "Why did it last terminate?"),
    ("working_set", "container_memory_working_set_bytes{{{sel}}}", "How much memory does it use?"),
    ("limits", "kube_pod_container_resource_limits{{{sel}}}", "What are its memory and CPU limits?"),
    ("throttled", "rate(container_cpu_cfs_throttled_periods_total{{{sel}}}[5m]) / "
                  "rate(container_cpu_cfs_periods_total{{{sel}}}[5m])", "Is its CPU throttled?"),
)


def offers_metrics(conv: Conversation) -> bool:
    return "execute_query" in conv.tools


def _subject(found: Findings) -> tuple[str, str]:
    """(namespace, pod) of the alert: the pod the cluster listing resolved, else what the alert names."""
    if found.primary is not None:
        return found.primary.namespace, found.primary.name
    return found.targets.first("namespace"), found.targets.first("pod")


def _query(key: str, namespace: str, pod: str) -> str:
    sel = ", ".join(f'{label}="{value}"' for label, value in (("namespace", namespace), ("pod", pod)) if value)
    return next(template for k, template, _ in QUERIES if k == key).format(sel=sel)


def next_metrics_action(conv: Conversation, found: Findings) -> Action | None:
    """The next call of the metrics plan, or None when it is time to report."""
    if "pods_list" in conv.tools and not conv.attempted("pods_list"):
        return Action("pods_list", {}, "Find the alert's pod in the cluster before asking the metrics about it.")
    namespace, pod = _subject(found)
    if not pod:
        return None
    for key, _, question in QUERIES:
        query = _query(key, namespace, pod)
        if not conv.attempted("execute_query", query=query):
            return Action("execute_query", {"query": query}, question.format(pod=pod))
    return None


@dataclass
class _Answer:
    values: list[tuple[dict, float]]
    cite: str


def _answers(conv: Conversation, namespace: str, pod: str) -> dict[str, _Answer]:
    answers = {}
    for key, _, _ in QUERIES:
        tried = [o for o in conv.attempted("execute_query", query=_query(key, namespace, pod)) if not o.is_error]
        if not tried:
            continue
        try:
            result = json.loads(tried[-1].text).get("result") or []
            values = [(r["metric"], float(r["value"][1])) for r in result]
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):
            continue
        answers[key] = _Answer(values, f" [{tried[-1].evidence_id}]" if tried[-1].evidence_id else "")
    return answers


def _mib(value: float) -> str:
    return f"{value / 2**20:.0f}Mi"


def metrics_report(conv: Conversation, found: Findings) -> str:
    namespace, pod = _subject(found)
    answers = _answers(conv, namespace, pod)
    if not answers:
        errors = [f"- {error}" for error in found.errors]
        return "\n".join(["## Metrics analysis", "", LABEL, "", f"**Root cause:** undetermined: no metric of "
                          f"`{pod or 'the alert'}` could be read.", *errors])
    restarts = answers.get("restarts")
    count = int(sum(v for _, v in restarts.values)) if restarts else 0
    reasons = [m.get("reason", "") for m, _ in answers["terminated"].values] if "terminated" in answers else []
    used = answers.get("working_set")
    limits = answers.get("limits")
    memory_limit = next((v for m, v in limits.values if m.get("resource") == "memory"), 0.0) if limits else 0.0
    cpu_limit = next((v for m, v in limits.values if m.get("resource") == "cpu"), 0.0) if limits else 0.0
    working_set = max((v for _, v in used.values), default=0.0) if used else 0.0
    throttled = answers.get("throttled")
    share = max((v for _, v in throttled.values), default=0.0) if throttled else 0.0
    cite = {key: answer.cite for key, answer in answers.items()}
    lines = [f"- Restarts: {count}{cite.get('restarts', '')}."]
    if reasons:
        lines.append(f"- Last termination: {', '.join(reasons)}{cite['terminated']}.")
    if used:
        of = f" of its {_mib(memory_limit)} limit ({working_set / memory_limit:.0%})" if memory_limit else ""
        lines.append(f"- Memory working set: {_mib(working_set)}{of}{cite['working_set']}"
                     f"{cite.get('limits', '') if memory_limit else ''}.")
    if throttled:
        at = f" at its {cpu_limit * 1000:.0f}m CPU limit" if cpu_limit else ""
        lines.append(f"- CPU throttled in {share:.0%} of CFS periods{at}{cite['throttled']}"
                     f"{cite.get('limits', '') if cpu_limit else ''}.")
    cause = _cause(pod, count, reasons, working_set, memory_limit, share, cpu_limit, cite)
    why = found.focus.why or "named by the alert"
    return "\n".join(["## Metrics analysis", "", LABEL, "", f"**Investigated:** `{pod}` (namespace `{namespace}`), "
                      f"{why}{found.cite('pods_list')}.", "", f"**Root cause:** {cause}.", "", "### Evidence", *lines])


def _cause(pod: str, count: int, reasons: list[str], working_set: float, memory_limit: float, share: float,
           cpu_limit: float, cite: dict[str, str]) -> str:
    memory = cite.get("working_set", "") + cite.get("limits", "")
    if "OOMKilled" in reasons or (memory_limit and working_set >= MEMORY_SATURATED * memory_limit):
        oom = f", last terminated OOMKilled{cite.get('terminated', '')}" if "OOMKilled" in reasons else ""
        return (f"`{pod}` runs out of memory: its working set is at {working_set / memory_limit:.0%} of its "
                f"{_mib(memory_limit)} limit{memory}{oom}" if memory_limit else f"`{pod}` was OOMKilled{oom}")
    if share >= CPU_STARVED:
        at = f" at its {cpu_limit * 1000:.0f}m CPU limit" if cpu_limit else ""
        return (f"`{pod}` is starved of CPU: throttled in {share:.0%} of CFS periods{at}"
                f"{cite.get('throttled', '')}{cite.get('limits', '')}, {count} restarts{cite.get('restarts', '')}")
    if count:
        return (f"undetermined by the metrics: `{pod}` restarted {count} times{cite.get('restarts', '')} without "
                f"memory or CPU saturation{memory}{cite.get('throttled', '')}; the cause is in the cluster "
                "(events, logs)")
    return f"none in the metrics: `{pod}` has not restarted{cite.get('restarts', '')} and is not saturated{memory}"
