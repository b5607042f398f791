"""The demo investigator's conclusions: ordered rules over the facts the tools returned.

Each rule reads `Findings` (pod states, terminations, waiting messages, events, log lines, nodes, objects the
tools found or did not find) and either states a root cause with the results it rests on and what to do, or
passes. No rule knows a pod by name: the same rules answer any cluster whose tools say the same things.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from agents.quotes import quote

from .evidence import is_signal
from .findings import Findings

_THROTTLED = re.compile(r"throttl", re.I)
_PROBE_TIMEOUT = re.compile(r"(?:Liveness|Readiness) probe failed:.*(?:deadline exceeded|timeout|timed out)", re.I)
_PULL_FAILURE = re.compile(r"Failed to pull image \"(?P<image>[^\"]+)\": (?P<why>.*)")


@dataclass
class Diagnosis:
    cause: str
    keys: list[str] = field(default_factory=list)  # the results it rests on (Findings.sources keys)
    actions: list[str] = field(default_factory=list)


def _pod_keys(name: str) -> list[str]:
    return ["pods_list", f"pods_get:{name}", f"pods_log:{name}"]


def _exit_text(found: Findings) -> str:
    detail = found.details.get(found.primary.name) if found.primary else None
    return f" (exit code {detail.last_exit_code})" if detail and detail.last_exit_code is not None else ""


def node_state(found: Findings) -> Diagnosis | None:
    """The alert names a node and none of its pods is failing: the node's own conditions and events."""
    node = found.nodes.get(found.focus.node)
    if found.primary is not None or node is None:
        return None
    state = ", ".join(f"**{p}**" for p in node.problems) or "all conditions healthy"
    cause = f"node `{node.name}` reports {state}" + (f", taints {', '.join(node.taints)}" if node.taints else "")
    failing = [p for p in found.pods if p.node == node.name and p.unhealthy]
    if not node.problems:
        cause += ": the node trouble the alert reports is not visible in the demo cluster now"
    cause += (f"; of its pods, {', '.join(f'`{p.name}` ({p.status})' for p in failing)} "
              f"{'fails' if len(failing) == 1 else 'fail'} for reasons of {'its' if len(failing) == 1 else 'their'} "
              "own, which a node problem does not explain") if failing else "; none of its pods is failing"
    said = [f"{e.reason}: \"{quote(e.message, 200)}\"" for e in found.related_warnings()][-2:]
    cause += f"; its events: {'; '.join(said)}" if said else ""
    return Diagnosis(cause, ["pods_list", f"resources_get:Node/{node.name}", "events_list"],
                     [f"Act on what the events of `{node.name}` report; its pods run normally."])


def node_pressure(found: Findings) -> Diagnosis | None:
    pod = found.primary
    node_name = found.focus.node or (found.details[pod.name].node if pod and pod.name in found.details else "")
    node = found.nodes.get(node_name)
    if node is None or not node.problems:
        return None
    detail = found.details.get(pod.name) if pod else None
    cause = f"node `{node.name}` reports {', '.join(f'**{p}**' for p in node.problems)}"
    if node.taints:
        cause += f" and is tainted {', '.join(f'`{t}`' for t in node.taints)}"
    if pod and detail and detail.reason == "Evicted":
        cause += f"; the kubelet evicted `{pod.name}`: \"{detail.message}\""
    keys = [f"resources_get:Node/{node.name}", "events_list", *(_pod_keys(pod.name) if pod else [])]
    actions = [
        f"Free space on `{node.name}` now (the evicted pod's data, unused images) so the kubelet lifts the pressure "
        "and the taint.",
        "Cap what filled the disk: set `ephemeral-storage` requests and limits on the pod the eviction message "
        "names, and a size limit on any disk buffer it writes.",
        "Find why it wrote so much (its logs: an output that rejects data makes a shipper buffer to disk).",
    ]
    return Diagnosis(cause, keys, actions)


def missing_reference(found: Findings) -> Diagnosis | None:
    pod = found.primary
    kind, name = found.missing_reference()
    if pod is None or not name:
        return None
    detail = found.details.get(pod.name)
    state = detail.waiting_reason if detail and detail.waiting_reason else pod.status
    cause = f"`{pod.name}` cannot start (**{state}**): it references {kind} `{name}`, which does not exist in "
    cause += f"namespace `{pod.namespace}`"
    keys = [*_pod_keys(pod.name), "events_list", f"resources_get:{kind}/{name}", f"resources_list:{kind}"]
    if (kind, name) not in found.absent:
        cause = f"`{pod.name}` cannot start (**{state}**): the kubelet reports {kind} `{name}` not found"
    others = [n for n in found.listed.get(kind, []) if n != name]
    if others:
        cause += f" (its {kind}s: {', '.join(f'`{n}`' for n in others)})"
    actions = [
        f"Create {kind} `{name}` in `{pod.namespace}`, or point the workload at the {kind} that holds these keys"
        + (f" (one of {', '.join(f'`{n}`' for n in others)})" if others else "") + ".",
        f"Roll the workload of `{pod.name}` out again once the reference resolves; its pods start on their own.",
    ]
    return Diagnosis(cause, keys, actions)


def image_pull(found: Findings) -> Diagnosis | None:
    pod = found.primary
    if pod is None or pod.status not in ("ImagePullBackOff", "ErrImagePull"):
        return None
    failures = [m for e in found.events if e.object == pod.name for m in [_PULL_FAILURE.search(e.message)] if m]
    detail = found.details.get(pod.name)
    image = failures[-1].group("image") if failures else (detail.image if detail else "its image")
    why = failures[-1].group("why") if failures else ""
    if re.search(r"not found|manifest unknown", why, re.I):
        problem = f"image `{image}` does not exist in the registry (not found)"
    elif re.search(r"unauthori[sz]ed|denied|authentication", why, re.I):
        problem = f"the registry refuses to serve `{image}` to the node (authorization)"
    elif re.search(r"toomanyrequests|rate limit", why, re.I):
        problem = f"the registry rate-limits pulls of `{image}`"
    else:
        problem = f"the node cannot pull `{image}`" + (f": {quote(why, 160)}" if why else "")
    cause = f"`{pod.name}` is in **{pod.status}**: {problem}"
    owner = detail.owner[1] if detail else ""
    deployment = re.sub(r"-[a-z0-9]{8,10}$", "", owner) if owner else ""
    keys = [*_pod_keys(pod.name), "events_list", f"resources_get:Deployment/{deployment}"]
    running = [p for p in found.pods if p.workload == pod.workload and p.namespace == pod.namespace
               and not p.unhealthy]
    if running:
        cause += f"; the previous pods of `{pod.workload}` keep serving ({len(running)} running)"
    actions = [
        f"Roll back: `kubectl rollout undo deployment/{deployment or pod.workload} -n {pod.namespace}`.",
        f"Publish `{image}` (or fix the tag in the Deployment) before rolling forward again.",
    ]
    return Diagnosis(cause, keys, actions)


def cpu_throttling(found: Findings) -> Diagnosis | None:
    pod = found.primary
    if pod is None:
        return None
    lines = [line for line in found.logs.get(pod.name, []) if _THROTTLED.search(line)]
    if not lines:
        return None
    detail = found.details.get(pod.name)
    limit = f" at its {detail.cpu_limit} CPU limit" if detail and detail.cpu_limit else ""
    cause = f"`{pod.name}` is **CPU-throttled**{limit}: \"{lines[-1].split(' ', 1)[-1].strip()}\""
    probes = [e for e in found.events if e.object == pod.name and _PROBE_TIMEOUT.search(e.message)]
    if probes:
        cause += (f"; its probes time out (\"{quote(probes[-1].message, 200)}\"), so the kubelet restarts it "
                  f"({pod.restarts} restarts)")
    actions = [
        f"Raise or remove the CPU limit of `{pod.workload}` (now {detail.cpu_limit if detail else 'unknown'}) and "
        "set the request to what it uses under load.",
        "Give the liveness probe a longer timeout (or a startupProbe) so a busy pod is not killed.",
    ]
    return Diagnosis(cause, [*_pod_keys(pod.name), "events_list"], actions)


def unresolvable_service(found: Findings) -> Diagnosis | None:
    pod = found.primary
    if pod is None or not found.dns_host:
        return None
    service = found.dns_host.split(".")[0]
    cause = f"`{pod.name}` is not Ready: it looks up `{found.dns_host}`, which does not resolve (no such host)"
    if ("Service", service) in found.absent:
        cause += f" because namespace `{pod.namespace}` has no Service `{service}`"
        others = found.listed.get("Service", [])
        cause += f" (its Services: {', '.join(f'`{n}`' for n in others)})" if others else ""
    actions = [
        f"Point the setting that names `{found.dns_host}` at an existing Service"
        + (f" ({', '.join(f'`{n}`' for n in found.listed.get('Service', []) if n != pod.workload)})"
           if found.listed.get("Service") else "") + ", or create Service `" + service + "`.",
        f"Restart `{pod.workload}` after the change; its readiness check passes once the name resolves.",
    ]
    keys = [*_pod_keys(pod.name), "events_list", f"resources_get:Service/{service}", "resources_list:Service"]
    return Diagnosis(cause, keys, actions)


def dependency_down(found: Findings) -> Diagnosis | None:
    pod, dep = found.primary, found.dependency
    if pod is None or not found.dependency_host:
        return None
    exit_text = _exit_text(found)
    if dep is None:
        return Diagnosis(f"`{pod.name}` cannot reach `{found.dependency_host}`{exit_text}, and no pod for it was "
                         "found", _pod_keys(pod.name),
                         [f"Find what serves `{found.dependency_host}` and why it refuses connections."])
    dep_detail = found.details.get(dep.name)
    keys = [*_pod_keys(pod.name), f"pods_get:{dep.name}"]
    if dep_detail and dep_detail.last_reason == "OOMKilled":
        limit = f" at its {dep_detail.memory_limit} memory limit" if dep_detail.memory_limit else ""
        cause = (f"`{dep.name}` is being **OOMKilled**{limit} ({dep_detail.restarts} restarts); while it restarts "
                 f"it refuses connections, so `{pod.name}` cannot reach `{found.dependency_host}` at startup, "
                 f"exits{exit_text} and is in **{pod.status}**")
        return Diagnosis(cause, keys, [
            f"Raise the memory limit of `{dep.name}` (now {dep_detail.memory_limit or 'unknown'}) in its "
            "workload spec, and size the database's memory settings to fit inside it.",
            f"Find what drives the memory growth in `{dep.name}` "
            "(check its previous logs for large queries or temporary files).",
            f"Once `{dep.name}` is Ready, `{pod.name}` recovers on its own; delete it to skip the back-off.",
            f"Make `{pod.name}`'s startup retry the database with back-off instead of exiting.",
        ])
    state = dep_detail.last_reason if dep_detail and dep_detail.last_reason else dep.status
    cause = (f"`{pod.name}` cannot reach its dependency `{found.dependency_host}`: `{dep.name}` is unhealthy "
             f"({state}, ready {dep.ready}); `{pod.name}` exits{exit_text} and is in **{pod.status}**")
    return Diagnosis(cause, keys, [f"Restore `{dep.name}` first, then let `{pod.name}` restart."])


def oom_killed(found: Findings) -> Diagnosis | None:
    pod = found.primary
    detail = found.details.get(pod.name) if pod else None
    if not pod or not detail or detail.last_reason != "OOMKilled":
        return None
    cause = (f"`{pod.name}` is **OOMKilled** at its {detail.memory_limit or 'configured'} memory limit "
             f"(exit code {detail.last_exit_code}, {detail.restarts} restarts)")
    return Diagnosis(cause, [*_pod_keys(pod.name), "events_list"], [
        f"Raise the memory limit of `{pod.workload}` (now {detail.memory_limit or 'unknown'}), or lower what the "
        "process may use inside it.",
        f"Find what drives the memory growth in `{pod.name}` (its previous logs just before the kill).",
    ])


def healthy_target(found: Findings) -> Diagnosis | None:
    pod = found.primary
    if pod is None or not found.focus.healthy:
        return None
    cause = (f"not visible in the demo cluster: `{pod.name}` (namespace `{pod.namespace}`) is {pod.status}, ready "
             f"{pod.ready}, with {pod.restarts} restarts, and its logs and events show no failure")
    return Diagnosis(cause, [*_pod_keys(pod.name), "events_list"], [
        "Check the alert's source for what it measured; the pod's state does not explain it.",
    ])


def fallback(found: Findings) -> Diagnosis:
    pod = found.primary
    if pod is None:
        return Diagnosis("no unhealthy pod was found in the tool results", ["pods_list"],
                         ["Check the alert source: the cluster looked healthy when the tools were queried."])
    said = [f"{e.reason} on `{e.object}`: \"{quote(e.message, 200)}\"" for e in found.related_warnings()
            if e.reason not in ("BackOff", "Unhealthy")][-2:]
    fatal = [line for line in found.logs.get(pod.name, []) if is_signal(line)][:1]
    said += [f"its log says \"{quote(fatal[0].split(' ', 1)[-1], 200)}\""] if fatal else []
    detail = "; ".join(said) or "its logs and events below show why"
    return Diagnosis(f"`{pod.name}` is in **{pod.status}**{_exit_text(found)}: {detail}",
                     [*_pod_keys(pod.name), "events_list"],
                     [f"Inspect `{pod.name}`'s logs and recent changes (image, config, limits) and fix the failing "
                      "start-up."])


RULES: tuple[Callable[[Findings], Diagnosis | None], ...] = (
    node_state,
    healthy_target,
    node_pressure,
    missing_reference,
    image_pull,
    cpu_throttling,
    unresolvable_service,
    dependency_down,
    oom_killed,
)


def diagnose(found: Findings) -> Diagnosis:
    return next((d for rule in RULES if (d := rule(found))), None) or fallback(found)
