"""The demo cluster's write tools: scale, set limits, rollout restart and rollout undo, which change its state.

Every change is kept in a journal — the JSON file named by TARSY_DEMO_CLUSTER_STATE, else this process's memory —
and the cluster is the baseline data with the journal replayed, so the read-only server the investigators use and
the action server (two processes) see the same cluster. What a change does follows from the objects, as the
kubelet would have it: a pod OOMKilled at its memory limit runs once the limit is raised above it, a pod throttled
at its CPU limit recovers once that is raised, a rollout undo replaces the pods of a bad image with the previous
revision's, a restart starts afresh a pod whose cause is gone (a database that is ready again) and leaves one whose
cause stays (a missing Secret, a bad image, a low limit) failing.
"""

from __future__ import annotations

import copy
import json
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from . import demo_cluster_data as data

STATE_ENV = "TARSY_DEMO_CLUSTER_STATE"
WRITE_TOOLS = ("resources_scale", "resources_set_limits", "rollout_restart", "rollout_undo")
MAX_REPLICAS = 10  # a demo cluster of four nodes
WORKLOAD_KINDS = ("Deployment", "StatefulSet")
_BASELINE = copy.deepcopy((data.PODS, data.RESOURCES, data.EVENTS, data.LOGS))
_STAYS = ("CreateContainerConfigError", "ImagePullBackOff", "ErrImagePull")  # a restart does not cure these
_DATABASE = re.compile(r"connect to database (?P<host>[a-z0-9][a-z0-9\-]*)[.:]")
_THROTTLED = re.compile(r"cpu throttled .*cgroup cpu limit (?P<limit>\d+m?)")
_memory_journal: list[dict[str, Any]] = []
_seen: tuple[int, int] | None = None


def _fail(message: str) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    raise ToolError(message)


# ---- the journal ------------------------------------------------------------------------------


def _path() -> Path | None:
    value = os.environ.get(STATE_ENV, "").strip()
    return Path(value) if value else None


def _read_journal(path: Path) -> list[dict[str, Any]]:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return []


def sync() -> None:
    """Bring this process's cluster up to the journal (a no-op when the journal did not change)."""
    global _seen
    path = _path()
    if path is None:
        return
    try:
        stat = path.stat()
        mark: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
    except FileNotFoundError:
        mark = None
    if mark == _seen:
        return
    _seen = mark
    _replay(_read_journal(path) if mark else [])


def _replay(changes: list[dict[str, Any]]) -> None:
    pods, resources, events, logs = copy.deepcopy(_BASELINE)
    data.PODS[:] = pods
    data.RESOURCES.clear()
    data.RESOURCES.update(resources)
    data.EVENTS[:] = events
    data.LOGS.clear()
    data.LOGS.update(logs)
    for change in changes:
        _apply(change)


def _record(change: dict[str, Any]) -> str:
    """Apply a change (a ToolError when it cannot be made, recording nothing) and append it to the journal."""
    global _seen
    sync()
    said = _apply(change)
    path = _path()
    if path is None:
        _memory_journal.append(change)
        return said
    changes = [*_read_journal(path), change]
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(json.dumps(changes))
    os.replace(scratch, path)
    stat = path.stat()
    _seen = (stat.st_mtime_ns, stat.st_size)
    return said


def reset() -> None:
    """Back to the baseline: the journal is emptied (a new demo starts from its incidents)."""
    global _seen
    path = _path()
    if path is not None:
        path.unlink(missing_ok=True)
    _memory_journal.clear()
    _seen = None
    _replay([])


# ---- objects ----------------------------------------------------------------------------------


def _workload(kind: str, name: str, namespace: str) -> dict[str, Any]:
    if kind not in WORKLOAD_KINDS:
        _fail(f"kind must be one of {', '.join(WORKLOAD_KINDS)}, got {kind!r}")
    for obj in data.RESOURCES.get(("apps/v1", kind), []):
        if obj["metadata"]["name"] == name and obj["metadata"].get("namespace") == namespace:
            return obj
    _fail(f'{kind.lower()}s.apps "{name}" not found in namespace {namespace}')
    raise AssertionError("unreachable")


def _pods_of(workload: dict[str, Any]) -> list[dict[str, Any]]:
    meta = workload["metadata"]
    return [p for p in data.PODS if p["metadata"]["namespace"] == meta["namespace"]
            and (p["metadata"].get("labels") or {}).get("app") == meta["name"]]


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    return pod["spec"]["containers"][0]


def _status(pod: dict[str, Any]) -> dict[str, Any]:
    return pod["status"]["containerStatuses"][0]


def _ready(pod: dict[str, Any]) -> bool:
    return bool(_status(pod).get("ready")) and not pod["status"].get("reason")


def _quantity(value: str, kind: str) -> float:
    """Bytes of a memory quantity (`256Mi`, `1Gi`), or millicores of a CPU one (`250m`, `1`)."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "K": 10**3, "M": 10**6, "G": 10**9} if kind == "memory" \
        else {"m": 1, "": 1000}
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G|m)?", value.strip())
    if match is None or (match.group(2) or "") not in units:
        _fail(f"{value!r} is not a {kind} quantity (e.g. {'512Mi' if kind == 'memory' else '500m'})")
        raise AssertionError("unreachable")
    return float(match.group(1)) * float(units[match.group(2) or ""])


def _event(pod_or_workload: dict[str, Any], type_: str, reason: str, message: str) -> None:
    meta = pod_or_workload["metadata"]
    data.EVENTS.append(data._event(meta["namespace"], pod_or_workload["kind"], meta["name"], type_, reason, message,
                                   timedelta(seconds=5)))


def _run_afresh(pod: dict[str, Any]) -> None:
    """The pod's container started again and is ready: no restarts, no last termination; its old warnings and logs
    belong to the container that is gone."""
    meta, status = pod["metadata"], pod["status"]
    _status(pod).update(ready=True, started=True, restartCount=0, lastState={},
                        state={"running": {"startedAt": data.ts(timedelta(seconds=30))}})
    status.pop("reason", None)
    status.pop("message", None)
    status["phase"] = "Running"
    for condition in status["conditions"]:
        if condition["type"] in ("Ready", "ContainersReady"):
            condition.update(status="True", lastTransitionTime=data.ts(timedelta(seconds=20)))
    for key in [k for k in data.LOGS if k[:2] == (meta["namespace"], meta["name"])]:
        del data.LOGS[key]
    data.EVENTS[:] = [e for e in data.EVENTS if not (e["Type"] == "Warning" and e["Namespace"] == meta["namespace"]
                                                     and e["InvolvedObject"]["Name"] == meta["name"])]
    _event(pod, "Normal", "Started", f"Started container {_container(pod)['name']}")


def _throttled_at(pod: dict[str, Any]) -> float | None:
    """The CPU limit (millicores) the pod's logs say it is throttled at; None when they do not."""
    meta = pod["metadata"]
    for (namespace, name, _), text in data.LOGS.items():
        match = _THROTTLED.search(text) if (namespace, name) == (meta["namespace"], meta["name"]) else None
        if match:
            return _quantity(match.group("limit"), "cpu")
    return None


def _cause_stays(pod: dict[str, Any]) -> bool:
    waiting = (_status(pod).get("state") or {}).get("waiting") or {}
    oom = ((_status(pod).get("lastState") or {}).get("terminated") or {}).get("reason") == "OOMKilled"
    return waiting.get("reason") in _STAYS or oom or _throttled_at(pod) is not None


def _converge() -> None:
    """What follows by itself: a pod crashing because its database refused connections starts once the database's
    pods are ready; workloads count their ready pods."""
    for pod in data.PODS:
        meta = pod["metadata"]
        if _ready(pod) or (_status(pod).get("state") or {}).get("waiting", {}).get("reason") != "CrashLoopBackOff":
            continue
        logs = " ".join(t for (ns, name, _), t in data.LOGS.items() if (ns, name) == (meta["namespace"], meta["name"]))
        match = _DATABASE.search(logs)
        backing = [p for p in data.PODS if match and p["metadata"]["namespace"] == meta["namespace"]
                   and (p["metadata"].get("labels") or {}).get("app") == match.group("host")]
        if backing and all(_ready(p) for p in backing):
            _run_afresh(pod)
    for kind in WORKLOAD_KINDS:
        for workload in data.RESOURCES.get(("apps/v1", kind), []):
            pods = _pods_of(workload)
            ready = sum(_ready(p) for p in pods)
            workload["status"].update(readyReplicas=ready, replicas=len(pods))
            meta = workload["metadata"]
            if pods and ready == len(pods):  # its "0 of 1 replicas ready" warnings are about pods that are gone
                data.EVENTS[:] = [e for e in data.EVENTS if not (e["Type"] == "Warning" and e["Namespace"] ==
                                                                 meta["namespace"] and e["InvolvedObject"]["Name"]
                                                                 == meta["name"])]
            if kind == "Deployment":
                workload["status"].update(availableReplicas=ready, unavailableReplicas=len(pods) - ready)


# ---- changes ----------------------------------------------------------------------------------


def _apply(change: dict[str, Any]) -> str:
    op = {"set_limits": _set_limits, "scale": _scale, "restart": _restart, "undo": _undo}[change["op"]]
    said = op(change)
    _converge()
    return said


def _set_limits(change: dict[str, Any]) -> str:
    workload = _workload(change["kind"], change["name"], change["namespace"])
    new = {k: change[k] for k in ("cpu", "memory") if change.get(k)}
    if not new:
        _fail("give cpu, memory or both")
    for kind, value in new.items():
        _quantity(value, kind)
    template = workload["spec"].setdefault("template", {"metadata": {"labels": {"app": change["name"]}}, "spec": {}})
    pods = _pods_of(workload)
    containers = template["spec"].setdefault("containers", [copy.deepcopy(_container(pods[0]))] if pods else [])
    for container in containers:
        container.setdefault("resources", {}).setdefault("limits", {}).update(new)
    for pod in pods:
        limits = _container(pod).setdefault("resources", {}).setdefault("limits", {})
        old = dict(limits)
        limits.update(new)
        oom = ((_status(pod).get("lastState") or {}).get("terminated") or {}).get("reason") == "OOMKilled"
        raised_memory = "memory" in new and _quantity(new["memory"], "memory") > _quantity(old.get("memory") or "0",
                                                                                             "memory")
        throttled = _throttled_at(pod)
        if (oom and raised_memory) or ("cpu" in new and throttled is not None
                                       and _quantity(new["cpu"], "cpu") > throttled):
            _run_afresh(pod)
    limits = ", ".join(f"{k} {v}" for k, v in new.items())
    _event(workload, "Normal", "ResourcesUpdated", f"limits set to {limits}; {len(pods)} pod(s) rolled")
    return f"{change['kind'].lower()}.apps/{change['name']} limits set to {limits} ({len(pods)} pod(s) rolled)"


def _scale(change: dict[str, Any]) -> str:
    workload = _workload(change["kind"], change["name"], change["namespace"])
    replicas = int(change["replicas"])
    if not 0 <= replicas <= MAX_REPLICAS:
        _fail(f"replicas must be between 0 and {MAX_REPLICAS}")
    pods = _pods_of(workload)
    workload["spec"]["replicas"] = replicas
    for pod in sorted(pods, key=_ready)[: max(0, len(pods) - replicas)]:  # the failing ones go first
        data.PODS.remove(pod)
    healthy = [p for p in pods if _ready(p)] or pods
    for index in range(len(pods), replicas):
        if not healthy:
            _fail(f"{change['name']} has no pod to scale from")
        pod = copy.deepcopy(healthy[0])
        name = f"{change['name']}-{index}" if change["kind"] == "StatefulSet" else \
            f"{pod['metadata']['name'].rsplit('-', 1)[0]}-s{index:04d}"
        pod["metadata"].update(name=name, creationTimestamp=data.ts(timedelta(seconds=40)))
        data.PODS.append(pod)
    _event(workload, "Normal", "ScalingReplicaSet", f"Scaled {change['name']} to {replicas}")
    return f"{change['kind'].lower()}.apps/{change['name']} scaled to {replicas}"


def _restart(change: dict[str, Any]) -> str:
    workload = _workload(change["kind"], change["name"], change["namespace"])
    pods = _pods_of(workload)
    for pod in pods:
        if _cause_stays(pod):
            _status(pod)["restartCount"] = 0  # a new pod, with the same fault
        else:
            _run_afresh(pod)
    _event(workload, "Normal", "Restarted", f"rollout restart of {len(pods)} pod(s)")
    return f"{change['kind'].lower()}.apps/{change['name']} restarted"


def _undo(change: dict[str, Any]) -> str:
    workload = _workload("Deployment", change["name"], change["namespace"])
    containers = ((workload["spec"].get("template") or {}).get("spec") or {}).get("containers") or []
    current = containers[0]["image"] if containers else ""
    pods = _pods_of(workload)
    previous = [p for p in pods if _container(p)["image"] != current and _ready(p)]
    if not containers or not previous:
        _fail(f"deployment {change['name']} has no previous revision to roll back to")
    image = _container(previous[0])["image"]
    containers[0]["image"] = image
    revision = int(workload["metadata"].get("generation", 1)) + 1
    workload["metadata"]["generation"] = revision
    workload["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = str(revision)
    workload["status"]["conditions"] = [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                                        {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]
    for pod in pods:
        if _container(pod)["image"] != image:
            data.PODS.remove(pod)
            data.EVENTS[:] = [e for e in data.EVENTS if e["InvolvedObject"]["Name"] != pod["metadata"]["name"]]
    _event(workload, "Normal", "DeploymentRollback", f"Rolled back deployment {change['name']} to revision with image "
                                                       f"{image}")
    return f"deployment.apps/{change['name']} rolled back (image {image})"


# ---- tools ------------------------------------------------------------------------------------

Kind = Annotated[str, Field(description="Deployment or StatefulSet")]
Name = Annotated[str, Field(description="Name of the workload")]
Namespace = Annotated[str, Field(description="Namespace of the workload")]


def resources_scale(kind: Kind, name: Name, namespace: Namespace,
                    replicas: Annotated[int, Field(description="Desired number of replicas", ge=0)]) -> str:
    """Scale a Deployment or StatefulSet to a number of replicas."""
    return _record({"op": "scale", "kind": kind, "name": name, "namespace": namespace, "replicas": replicas})


def resources_set_limits(
    kind: Kind, name: Name, namespace: Namespace,
    memory: Annotated[str, Field(description="New memory limit of the workload's containers (e.g. 512Mi)")] = "",
    cpu: Annotated[str, Field(description="New CPU limit of the workload's containers (e.g. 1 or 500m)")] = "",
) -> str:
    """Set the memory and/or CPU limits of a Deployment's or StatefulSet's containers (rolls its pods)."""
    return _record({"op": "set_limits", "kind": kind, "name": name, "namespace": namespace, "memory": memory,
                    "cpu": cpu})


def rollout_restart(kind: Kind, name: Name, namespace: Namespace) -> str:
    """Restart every pod of a Deployment or StatefulSet (kubectl rollout restart)."""
    return _record({"op": "restart", "kind": kind, "name": name, "namespace": namespace})


def rollout_undo(name: Annotated[str, Field(description="Name of the Deployment")], namespace: Namespace) -> str:
    """Roll a Deployment back to its previous revision (kubectl rollout undo)."""
    return _record({"op": "undo", "name": name, "namespace": namespace})


TOOLS = (resources_scale, resources_set_limits, rollout_restart, rollout_undo)
