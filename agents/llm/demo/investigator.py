"""The demo investigator's plan and its final report.

Plan: list pods → choose the pod (or node) the alert names (`focus`) → its namespace's events → its details
→ its (previous) logs → follow what those results point at: the node it was evicted from, the Secret or
ConfigMap it cannot find, the Deployment behind a failing image pull, the Service a failed DNS lookup names,
the pod behind an unreachable dependency → conclude (`diagnosis`). Every claim quotes a tool result and cites
its evidence id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .diagnosis import diagnose
from .evidence import Conversation, PodDetail, PodRow
from .findings import Findings, gather

__all__ = ["LABEL", "Action", "final_report", "gather", "next_action", "unverified_report"]

LABEL = "_Produced by the built-in **demo** investigator (rule-based, no LLM): set an LLM API key for real analysis._"
NOT_STARTED = ("CreateContainerConfigError", "CreateContainerError", "ImagePullBackOff", "ErrImagePull",
               "ContainerCreating", "PodInitializing")


@dataclass
class Action:
    tool: str  # short name; mapped to the offered canonical name by the caller
    arguments: dict[str, Any]
    thought: str


def next_action(conv: Conversation, found: Findings) -> Action | None:
    """The next tool call of the plan, or None when it is time to conclude."""
    offered = conv.tools
    if not offered:
        return None
    node = found.targets.node_subject()
    if node and "resources_get" in offered and not conv.attempted("resources_get", kind="Node", name=node):
        return Action("resources_get", _get("Node", node), f"The alert is about node {node}; read its conditions "
                      "first.")
    if not conv.attempted("pods_list") and not conv.attempted("pods_list_in_namespace"):
        if "pods_list" in offered:
            return Action("pods_list", {}, "Start with every pod in the cluster to find the alert's resources.")
        if "pods_list_in_namespace" in offered:
            namespace = found.targets.first("namespace") or "default"
            return Action("pods_list_in_namespace", {"namespace": namespace}, f"List the pods in {namespace}.")
    for step in (_node_step, _node_events, _pod_steps, _follow_up):
        action = step(conv, found)
        if action:
            return action
    return None


def _get(kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    api = "apps/v1" if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet") else "v1"
    return {"apiVersion": api, "kind": kind, "name": name, **({"namespace": namespace} if namespace else {})}


def _node_step(conv: Conversation, found: Findings) -> Action | None:
    node = found.focus.node
    if node and "resources_get" in conv.tools and not conv.attempted("resources_get", kind="Node", name=node):
        return Action("resources_get", _get("Node", node), f"The alert names node {node}; read its conditions.")
    return None


def _node_events(conv: Conversation, found: Findings) -> Action | None:
    if found.focus.node and found.primary is None and "events_list" in conv.tools and not conv.attempted(
            "events_list"):
        return Action("events_list", {}, f"No pod on {found.focus.node} is failing; read the cluster's events.")
    return None


def _pod_steps(conv: Conversation, found: Findings) -> Action | None:
    offered, pod = conv.tools, found.primary
    if pod is None:
        return None
    ns, name = pod.namespace, pod.name
    if "events_list" in offered and not conv.attempted("events_list"):
        scope = {} if found.focus.node else {"namespace": ns}  # node events live outside the pod's namespace
        return Action("events_list", scope, f"{name} is {pod.status} ({pod.ready} ready, {pod.restarts} restarts); "
                      f"read the events{' in ' + ns if scope else ''}.")
    if "pods_get" in offered and not conv.attempted("pods_get", name=name):
        return Action("pods_get", {"namespace": ns, "name": name},
                      f"Get {name} to see its state, limits and how its container last terminated.")
    detail = found.details.get(name)
    never_ran = pod.status in NOT_STARTED or pod.status == "Evicted" or (
        detail is not None and detail.waiting_reason in NOT_STARTED and not detail.restarts)
    if "pods_log" in offered and not never_ran:
        previous = pod.restarts > 0
        tried = conv.attempted("pods_log", name=name)
        if not tried:
            what = "previous (crashed) container" if previous else "container"
            return Action("pods_log", {"namespace": ns, "name": name, "previous": previous},
                          f"Read the logs of the {what} of {name}.")
        if all(o.is_error for o in tried) and not conv.attempted("pods_log", name=name, previous=False):
            return Action("pods_log", {"namespace": ns, "name": name, "previous": False},
                          "Previous logs are unavailable; read the current container's logs.")
    return None


def _follow_up(conv: Conversation, found: Findings) -> Action | None:
    """One more call where the results so far point at another object."""
    offered, pod = conv.tools, found.primary
    if pod is None:
        return None
    detail = found.details.get(pod.name)
    can_get, can_list = "resources_get" in offered, "resources_list" in offered
    kind, missing = found.missing_reference()
    if missing and can_get and not conv.attempted("resources_get", kind=kind, name=missing):
        return Action("resources_get", _get(kind, missing, pod.namespace),
                      f"{pod.name} waits for {kind} {missing}; check whether it exists.")
    if missing and can_list and (kind, missing) in found.absent and not conv.attempted("resources_list", kind=kind):
        return Action("resources_list", {"apiVersion": "v1", "kind": kind, "namespace": pod.namespace},
                      f"{kind} {missing} does not exist; list the {kind}s {pod.namespace} has.")
    node = detail.node if detail else pod.node
    if (pod.status == "Evicted" or (detail and detail.reason == "Evicted")) and node and can_get \
            and not conv.attempted("resources_get", kind="Node", name=node):
        return Action("resources_get", _get("Node", node), f"{pod.name} was evicted from {node}; read its conditions.")
    if pod.status in ("ImagePullBackOff", "ErrImagePull") and detail and detail.owner[0] == "ReplicaSet" and can_get:
        deployment = re.sub(r"-[a-z0-9]{8,10}$", "", detail.owner[1])
        if not conv.attempted("resources_get", kind="Deployment", name=deployment):
            return Action("resources_get", _get("Deployment", deployment, pod.namespace),
                          f"Read Deployment {deployment} to see which image its rollout asks for.")
    if found.dns_host and can_get:
        service = found.dns_host.split(".")[0]
        parts = found.dns_host.split(".")
        namespace = parts[1] if len(parts) > 2 and parts[2] == "svc" else pod.namespace
        if not conv.attempted("resources_get", kind="Service", name=service):
            return Action("resources_get", _get("Service", service, namespace),
                          f"The logs say {found.dns_host} does not resolve; check Service {service}.")
        if ("Service", service) in found.absent and can_list and not conv.attempted("resources_list", kind="Service"):
            return Action("resources_list", {"apiVersion": "v1", "kind": "Service", "namespace": namespace},
                          f"Service {service} does not exist; list the Services in {namespace}.")
    dep = found.dependency
    if dep and "pods_get" in offered and not conv.attempted("pods_get", name=dep.name):
        return Action("pods_get", {"namespace": dep.namespace, "name": dep.name},
                      f"The logs say {pod.name} cannot reach {found.dependency_host}; inspect {dep.name}.")
    return None


# ---- report -----------------------------------------------------------------------------------


def _pod_line(pod: PodRow, detail: PodDetail | None) -> str:
    text = f"`{pod.name}` (namespace `{pod.namespace}`) is **{pod.status}**, ready {pod.ready}, {pod.restarts} restarts"
    if detail and detail.waiting_message:
        text += f"; waiting: {detail.waiting_reason} \"{detail.waiting_message}\""
    if detail and detail.last_reason:
        text += f"; last termination **{detail.last_reason}** with exit code {detail.last_exit_code}"
    if detail and detail.memory_limit:
        text += f"; memory limit {detail.memory_limit}"
    if detail and detail.cpu_limit:
        text += f"; CPU limit {detail.cpu_limit}"
    if detail and detail.image and detail.waiting_reason in ("ImagePullBackOff", "ErrImagePull"):
        text += f"; image `{detail.image}`"
    return text


def _scope_lines(found: Findings) -> list[str]:
    """What the alert named and what the cluster had of it; the cluster's failing pods when it lacked them."""
    focus, pod = found.focus, found.primary
    lines = []
    if focus.notes:
        failing = list({(p.namespace, p.workload): p for p in reversed(found.pods) if p.unhealthy}.values())[::-1]
        shown = ", ".join(f"`{p.name}` ({p.namespace}, {p.status}, ready {p.ready}, {p.restarts} restarts)"
                          for p in failing) or "none"
        lines.append(f"**Alert resources not found:** {'; '.join(focus.notes)}{found.cite('pods_list')}. "
                     f"Here is what the demo cluster's failing workloads show: {shown}.")
    if pod:
        lines.append(f"**Investigated:** `{pod.name}` (namespace `{pod.namespace}`), {focus.why}.")
    return lines + [""] if lines else []


def _evidence(found: Findings) -> list[str]:
    pod = found.primary
    if pod is None:
        node = found.focus.node
        failing = [p for p in found.pods if p.unhealthy and (not node or p.node == node)]
        where = f" on node `{node}`" if node else ""
        said = (f"failing{where}: {', '.join(f'`{p.name}` ({p.status}, {p.restarts} restarts)' for p in failing)}"
                if failing else f"no pod{where} is failing")
        return [f"- `pods_list`: {said}{found.cite('pods_list')}.", *_node_lines(found), *_event_lines(found)]
    lines = [f"- `pods_list`: {_pod_line(pod, found.details.get(pod.name))}"
             f"{found.cite('pods_list', f'pods_get:{pod.name}')}."]
    detail = found.details.get(pod.name)
    if detail and detail.reason:
        lines.append(f"- `pods_get`: status **{detail.reason}**: \"{detail.message}\""
                     f"{found.cite(f'pods_get:{pod.name}')}")
    for name, highlights in found.logs.items():
        lines.append(f"- `pods_log` of `{name}`{found.cite(f'pods_log:{name}')}:")
        lines += [f"  > {line}" for line in highlights]
    if found.dependency:
        dep = found.dependency.name
        lines.append(f"- `pods_get`: {_pod_line(found.dependency, found.details.get(dep))}"
                     f"{found.cite('pods_list', f'pods_get:{dep}')}.")
    lines += _node_lines(found)
    for kind, name in sorted(found.absent):
        lines.append(f"- `resources_get`: {kind} `{name}` not found{found.cite(f'resources_get:{kind}/{name}')}.")
    for kind, names in found.listed.items():
        lines.append(f"- `resources_list`: {kind}s: {', '.join(f'`{n}`' for n in names) or 'none'}"
                     f"{found.cite(f'resources_list:{kind}')}.")
    for (kind, name), obj in found.objects.items():
        if kind == "Deployment":
            containers = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
            images = ", ".join(f"`{c.get('image')}`" for c in containers if isinstance(c, dict)) or "unknown"
            lines.append(f"- `resources_get` Deployment `{name}`: template image {images}"
                         f"{found.cite(f'resources_get:Deployment/{name}')}.")
    return lines + _event_lines(found)


def _node_lines(found: Findings) -> list[str]:
    lines = []
    for node in found.nodes.values():
        state = ", ".join(node.problems) or "all conditions healthy"
        taints = f"; taints {', '.join(node.taints)}" if node.taints else ""
        lines.append(f"- `resources_get` Node `{node.name}`: {state}{taints}"
                     f"{found.cite(f'resources_get:Node/{node.name}')}.")
    return lines


def _event_lines(found: Findings) -> list[str]:
    return [f'- `events_list`: {e.type} **{e.reason}** on `{e.object}`: "{e.message}"{found.cite("events_list")}'
            for e in found.related_warnings()[:5]]


def final_report(conv: Conversation, found: Findings) -> str:
    if not conv.tools or (not found.pods and found.errors) or not conv.observations:
        return unverified_report(conv.alert, found.errors)
    diagnosis = diagnose(found)
    recalled = _recalled(conv, found)
    cause = _framed(found, diagnosis.cause) + _history(conv, found)
    lines = ["## Root cause analysis", "", LABEL, "", *_scope_lines(found), *recalled,
             f"**Root cause:** {cause}{found.cite(*diagnosis.keys)}.", "", "### Evidence",
             *_evidence(found), *[f"- {error}" for error in found.errors], "", "### Recommended actions"]
    lines += [f"{i}. {item}" for i, item in enumerate(diagnosis.actions, 1)]
    return "\n".join(lines)


# agents.memory.prompt's entries: "[M3] incident (confidence 0.65, …). The block below contains …" and then the
# memory's text in its own fence (three or more backticks, as agents.prompts.fence chose)
_MEMORY = re.compile(r"^\[M(?P<id>\d+)\] (?P<kind>\w+) \((?:[^()]|\([^()]*\))*\)\.[^\n]*\n"
                     r"(?P<fence>`{3,})text\n(?P<text>.*?)\n(?P=fence)$", re.M | re.S)


def _memories_about(conv: Conversation, found: Findings) -> list[re.Match[str]]:
    pod = found.primary
    if pod is None or "## Memories from past investigations" not in conv.alert:
        return []
    names = {pod.name, pod.workload, *([found.dependency.name, found.dependency.workload] if found.dependency
                                       else [])}
    return [m for m in _MEMORY.finditer(conv.alert) if any(re.search(rf"\b{re.escape(n)}\b", m["text"])
                                                           for n in names)]


def _history(conv: Conversation, found: Findings) -> str:
    """For a subject healthy now, what a recalled memory says happened to it (the summary repeats the cause)."""
    about = _memories_about(conv, found) if found.focus.healthy else []
    if not about:
        return ""
    said = about[0]["text"].split(": ", 1)[-1]
    cause = said.split(";")[0].split(". ")[0].rstrip(". ")  # its first clause, whole: never cut mid-word
    fixed = next((s.rstrip(". ") for s in re.split(r"(?<=\.) ", said) if s.startswith("Fixed by ")), "")
    number = about[0]["id"]
    return f"; memory M{number} of a past investigation recalls: {cause}{'; ' + fixed if fixed else ''} [M{number}]"


def _recalled(conv: Conversation, found: Findings) -> list[str]:
    """The recalled memories about what this investigation looked at, with what the cluster shows of it now."""
    pod, about = found.primary, _memories_about(conv, found)
    if pod is None or not about:
        return []
    now = "still failing" if pod.unhealthy else "healthy now"
    lines = [f"**Recalled from past investigations** (checked against the cluster: `{pod.name}` is {now}"
             f"{found.cite('pods_list')}):", ""]
    lines += [f"- [M{m['id']}] {m['kind']}: {m['text']}" for m in about]
    return lines + [""]


def _framed(found: Findings, cause: str) -> str:
    """The cause, said to be a stand-in when the cluster lacks what the alert names (the summary repeats this line,
    so it cannot blame another workload without saying so)."""
    if not found.focus.notes:
        return cause
    pod, claimed = found.primary, found.targets.claims.get("namespace", [])
    if pod is None:
        instead = "nothing else in the demo cluster explains it"
    elif pod.namespace in claimed:
        instead = f"namespace `{pod.namespace}`'s own failure instead: {cause}"
    else:
        instead = f"the demo cluster's failing pod that fits the alert best, elsewhere: {cause}"
    return f"undetermined for what the alert names ({'; '.join(found.focus.notes)}); {instead}"


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
