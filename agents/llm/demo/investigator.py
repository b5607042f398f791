"""The demo investigator's plan and its final report.

Plan: list pods → pick the unhealthy pod → its namespace's events → its details
→ its (previous) logs → if the logs name an unreachable dependency, that
dependency's pod → conclude. Every claim in the report quotes a tool result and cites its evidence id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .evidence import (
    Conversation,
    EventFact,
    PodDetail,
    PodRow,
    dependency_host,
    log_highlights,
    parse_events,
    parse_pod_detail,
    parse_pod_table,
)

LABEL = "_Produced by the built-in **demo** investigator (rule-based, no LLM): set an LLM API key for real analysis._"
_NAMESPACE_IN_ALERT = re.compile(r"namespace[\"']?\s*[:=]\s*[\"']?([a-z0-9][a-z0-9\-]*)", re.I)


@dataclass
class Action:
    tool: str  # short name; mapped to the offered canonical name by the caller
    arguments: dict[str, Any]
    thought: str


@dataclass
class Findings:
    """Facts gathered from tool results, in the shape the report needs."""

    pods: list[PodRow] = field(default_factory=list)
    primary: PodRow | None = None
    dependency: PodRow | None = None
    dependency_host: str = ""
    details: dict[str, PodDetail] = field(default_factory=dict)
    logs: dict[str, list[str]] = field(default_factory=dict)
    events: list[EventFact] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # "pods_list", "pods_log:<pod>"… → evidence id

    def cite(self, *keys: str) -> str:
        """The citations of the results behind `keys` (" [E1][E4]"), "" when none has an id."""
        ids = dict.fromkeys(self.sources[key] for key in keys if self.sources.get(key))
        return (" " + "".join(f"[{identifier}]" for identifier in ids)) if ids else ""


def gather(conv: Conversation) -> Findings:
    found = Findings()
    for obs in conv.observations:
        if obs.is_error:
            first = obs.text.strip().splitlines()[0][:200] if obs.text else ""
            found.errors.append(f"`{obs.short}` failed: {first}" + (f" [{obs.evidence_id}]" if obs.evidence_id else ""))
            continue
        if obs.short in ("pods_list", "pods_list_in_namespace"):
            found.pods = parse_pod_table(obs.text) or found.pods
            found.sources["pods_list"] = obs.evidence_id
        elif obs.short == "pods_get":
            detail = parse_pod_detail(obs.text)
            if detail:
                found.details[detail.name] = detail
                found.sources[f"pods_get:{detail.name}"] = obs.evidence_id
        elif obs.short == "pods_log":
            name = str(obs.arguments.get("name", ""))
            found.logs[name] = log_highlights(obs.text)
            found.sources[f"pods_log:{name}"] = obs.evidence_id
            found.dependency_host = found.dependency_host or dependency_host(obs.text)
        elif obs.short == "events_list":
            found.events = parse_events(obs.text)
            found.sources["events_list"] = obs.evidence_id
    unhealthy = sorted(
        (p for p in found.pods if p.unhealthy), key=lambda p: (p.name not in conv.alert, p.severity(), -p.restarts)
    )
    found.primary = unhealthy[0] if unhealthy else None
    if found.primary and found.dependency_host:
        found.dependency = _pod_for_host(found.pods, found.dependency_host, found.primary.namespace)
    return found


def _pod_for_host(pods: list[PodRow], host: str, namespace: str) -> PodRow | None:
    candidates = [p for p in pods if p.name == host or p.name.startswith(host + "-")]
    candidates.sort(key=lambda p: p.namespace != namespace)
    return candidates[0] if candidates else None


def next_action(conv: Conversation, found: Findings) -> Action | None:
    """The next tool call of the plan, or None when it is time to conclude."""
    offered = conv.tools
    if not offered:
        return None
    if not conv.attempted("pods_list") and not conv.attempted("pods_list_in_namespace"):
        if "pods_list" in offered:
            return Action("pods_list", {}, "Start with every pod in the cluster to find the failing workload.")
        if "pods_list_in_namespace" in offered:
            match = _NAMESPACE_IN_ALERT.search(conv.alert)
            namespace = match.group(1) if match else "default"
            return Action("pods_list_in_namespace", {"namespace": namespace}, f"List the pods in {namespace}.")
    pod = found.primary
    if pod is None:
        return None
    ns, name = pod.namespace, pod.name
    if "events_list" in offered and not conv.attempted("events_list"):
        return Action(
            "events_list",
            {"namespace": ns},
            f"{name} is {pod.status} ({pod.ready} ready, {pod.restarts} restarts); read the events in {ns}.",
        )
    if "pods_get" in offered and not conv.attempted("pods_get", name=name):
        return Action(
            "pods_get", {"namespace": ns, "name": name}, f"Get {name} to see how its container last terminated."
        )
    if "pods_log" in offered:
        previous = pod.restarts > 0
        tried = conv.attempted("pods_log", name=name)
        if not tried:
            what = "previous (crashed) container" if previous else "container"
            return Action(
                "pods_log",
                {"namespace": ns, "name": name, "previous": previous},
                f"Read the logs of the {what} of {name}.",
            )
        if all(o.is_error for o in tried) and not conv.attempted("pods_log", name=name, previous=False):
            return Action(
                "pods_log",
                {"namespace": ns, "name": name, "previous": False},
                "Previous logs are unavailable; read the current container's logs.",
            )
    dep = found.dependency
    if dep and "pods_get" in offered and not conv.attempted("pods_get", name=dep.name):
        return Action(
            "pods_get",
            {"namespace": dep.namespace, "name": dep.name},
            f"The logs say {name} cannot reach {found.dependency_host}; inspect {dep.name}.",
        )
    return None


# ---- report -----------------------------------------------------------------------------------


def _pod_line(pod: PodRow, detail: PodDetail | None) -> str:
    text = f"`{pod.name}` (namespace `{pod.namespace}`) is **{pod.status}**, ready {pod.ready}, {pod.restarts} restarts"
    if detail and detail.last_reason:
        text += f"; last termination **{detail.last_reason}** with exit code {detail.last_exit_code}"
    if detail and detail.memory_limit:
        text += f"; memory limit {detail.memory_limit}"
    return text


def root_cause(found: Findings) -> str:
    pod, dep = found.primary, found.dependency
    if pod is None:
        return "no unhealthy pod was found in the tool results"
    detail = found.details.get(pod.name)
    exit_text = f" (exit code {detail.last_exit_code})" if detail and detail.last_exit_code is not None else ""
    if dep:
        dep_detail = found.details.get(dep.name)
        if dep_detail and dep_detail.last_reason == "OOMKilled":
            limit = f" at its {dep_detail.memory_limit} memory limit" if dep_detail.memory_limit else ""
            return (
                f"`{dep.name}` is being **OOMKilled**{limit} ({dep_detail.restarts} restarts); while it restarts "
                f"it refuses connections, so `{pod.name}` cannot reach `{found.dependency_host}` at startup, "
                f"exits{exit_text} and is in **{pod.status}**"
            )
        state = dep_detail.last_reason if dep_detail and dep_detail.last_reason else dep.status
        return (
            f"`{pod.name}` cannot reach its dependency `{found.dependency_host}`: `{dep.name}` is unhealthy "
            f"({state}, ready {dep.ready}); `{pod.name}` exits{exit_text} and is in **{pod.status}**"
        )
    if found.dependency_host:
        return f"`{pod.name}` cannot reach `{found.dependency_host}`{exit_text}, and no pod for it was found"
    if detail and detail.last_reason == "OOMKilled":
        return f"`{pod.name}` is OOMKilled at its {detail.memory_limit or 'configured'} memory limit"
    return f"`{pod.name}` is in **{pod.status}**{exit_text}; its logs and events below show why"


def _recommendations(found: Findings) -> list[str]:
    pod, dep = found.primary, found.dependency
    if pod is None:
        return ["Check the alert source: the cluster looked healthy when the tools were queried."]
    dep_detail = found.details.get(dep.name) if dep else None
    if dep and dep_detail and dep_detail.last_reason == "OOMKilled":
        return [
            f"Raise the memory limit of `{dep.name}` (now {dep_detail.memory_limit or 'unknown'}) in its "
            "workload spec, and size the database's memory settings to fit inside it.",
            f"Find what drives the memory growth in `{dep.name}` "
            "(check its previous logs for large queries or temporary files).",
            f"Once `{dep.name}` is Ready, `{pod.name}` recovers on its own; delete it to skip the back-off.",
            f"Make `{pod.name}`'s startup retry the database with back-off instead of exiting.",
        ]
    if dep:
        return [f"Restore `{dep.name}` first, then let `{pod.name}` restart."]
    return [f"Inspect `{pod.name}`'s logs and recent changes (image, config, limits) and fix the failing start-up."]


def final_report(conv: Conversation, found: Findings) -> str:
    if not conv.tools or (not found.pods and found.errors) or not conv.observations:
        return unverified_report(conv.alert, found.errors)
    lines = ["## Root cause analysis", "", LABEL, "", f"**Root cause:** {root_cause(found)}{_cause_citations(found)}.",
             "", "### Evidence"]
    if found.primary:
        name = found.primary.name
        lines.append(f"- `pods_list`: {_pod_line(found.primary, found.details.get(name))}"
                     f"{found.cite('pods_list', f'pods_get:{name}')}.")
        for pod, highlights in found.logs.items():
            lines.append(f"- `pods_log` of `{pod}`{found.cite(f'pods_log:{pod}')}:")
            lines += [f"  > {line}" for line in highlights]
        if found.dependency:
            dep = found.dependency.name
            lines.append(f"- `pods_get`: {_pod_line(found.dependency, found.details.get(dep))}"
                         f"{found.cite('pods_list', f'pods_get:{dep}')}.")
        relevant = {found.primary.name, found.dependency.name if found.dependency else ""}
        for event in [
            e
            for e in found.events
            if e.type == "Warning" and (e.object in relevant or found.dependency_host in e.object)
        ][:5]:
            lines.append(f'- `events_list`: {event.type} **{event.reason}** on `{event.object}`: "{event.message}"'
                         f"{found.cite('events_list')}")
    else:
        lines.append(f"- `pods_list`: all {len(found.pods)} pods are Running and ready{found.cite('pods_list')}.")
    lines += [f"- {error}" for error in found.errors]
    lines += ["", "### Recommended actions"]
    lines += [f"{i}. {item}" for i, item in enumerate(_recommendations(found), 1)]
    return "\n".join(lines)


def _cause_citations(found: Findings) -> str:
    """The root cause rests on the primary pod's listing, details and logs, and the dependency's details."""
    if found.primary is None:
        return found.cite("pods_list")
    keys = ["pods_list", f"pods_get:{found.primary.name}", f"pods_log:{found.primary.name}"]
    if found.dependency:
        keys.append(f"pods_get:{found.dependency.name}")
    return found.cite(*keys)


def unverified_report(alert: str, errors: list[str]) -> str:
    pods = sorted(set(re.findall(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b", alert)))[:5]
    statuses = [s for s in ("CrashLoopBackOff", "OOMKilled", "ImagePullBackOff", "Pending", "Error") if s in alert]
    lines = [
        "## Analysis (unverified)",
        "",
        LABEL,
        "",
        "**Root cause:** could not verify with tools; based on the alert text alone"
        + (f", the reported state is {', '.join(statuses)}" if statuses else "")
        + ".",
    ]
    if pods:
        lines.append(f"- Names mentioned in the alert: {', '.join(f'`{p}`' for p in pods)}.")
    lines += [f"- {error}" for error in errors]
    lines += [
        "",
        "### Recommended actions",
        "1. Check the workload's pods, events and previous container logs directly (kubectl), "
        "since the tools were not available to this investigation.",
    ]
    return "\n".join(lines)
