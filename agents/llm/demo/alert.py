"""What an alert names, for the demo investigator: pod, workload, namespace, node, alert name and symptom.

Alerts arrive as free text or as JSON/YAML objects (Prometheus labels, Alertmanager webhooks with `alerts[].labels`
and `commonLabels`). Named keys ("pod: x", `namespace=y`) are claims the cluster must confirm; every other
name-shaped word of the alert is only a candidate, matched against what the tools list.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

_FENCED_ALERT = re.compile(r"^## Alert\b.*?^(?P<fence>`{3,})[^\n]*\n(?P<body>.*?)\n(?P=fence)\s*$", re.S | re.M)
_KEYS = {
    "pod": ("pod", "pod_name", "podname", "exported_pod", "kubernetes_pod_name"),
    "namespace": ("namespace", "exported_namespace", "kubernetes_namespace", "ns"),
    "workload": ("deployment", "statefulset", "daemonset", "replicaset", "workload", "app", "job_name",
                 "created_by_name"),
    "node": ("node", "nodename", "kubernetes_node", "instance", "host", "hostname"),
    "alertname": ("alertname", "alert", "alert_name"),
}
_TEXT_CLAIM = re.compile(
    r"\b(?P<key>pod|namespace|ns|deployment|statefulset|daemonset|node|instance|alertname)"
    r"(?P<sep>[ \t]*[:=][ \t]*|[ \t]+|/)[\"'`]?(?P<value>[A-Za-z0-9][\w.\-]*)",
    re.I,
)
# "shop namespace": Kubernetes names are lowercase, so "KubePodCrashLooping namespace: x" names x
_NAMESPACE_BEFORE = re.compile(r"(?<![\w\-])(?P<value>[a-z0-9][a-z0-9\-]*)[ \t]+(?i:namespace)\b")
_NAME_SHAPED = re.compile(r"[\-\d]")  # "pod web-1" names a pod; "the pod keeps restarting" does not
# "analytics-etl pods not starting": a name-shaped word before "pod(s)" names the workload those pods belong to
_PODS_OF = re.compile(r"(?<![\w\-./])(?P<value>[a-z0-9][a-z0-9\-]*[a-z0-9])[ \t]+pods?\b")
# Free-text fields of a structured alert (a PagerDuty title, annotations): read like a free-text alert
_PROSE_KEYS = {"title", "summary", "description", "message", "text", "details", "subject"}
_K8S_NAME = re.compile(r"[a-z0-9](?:[a-z0-9\-]*[a-z0-9])?")
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9\-.]*[a-z0-9])?")
_STOP = {"pod", "pods", "node", "nodes", "namespace", "deployment", "statefulset", "daemonset", "instance",
         "alertname", "the", "a", "an", "and", "is", "in", "on", "of", "for", "from", "to", "this", "that", "its"}
# Alert wording → pod-table STATUS values and conditions that fit it (first match wins).
SYMPTOMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"imagepull|errimage|image", ("ImagePullBackOff", "ErrImagePull")),
    (r"secret|configmap|createcontainerconfig|config ?error", ("CreateContainerConfigError",)),
    (r"evict|disk|filesystem|storage|nodenotready|node ?not ?ready|pressure", ("Evicted",)),
    (r"throttl|cpu|latency|slow|liveness", ("restarting-ready",)),
    (r"oom|memory", ("OOMKilled", "restarting-not-ready")),
    (r"crash|restart|backoff", ("CrashLoopBackOff", "restarting-not-ready", "restarting-ready")),
    (r"readiness|not ?ready|unavailable|5xx|503|dns|resolve", ("not-ready",)),
)
# Wording of a node's own trouble: with a node named and no pod or workload, the node is the alert's subject
NODE_TROUBLE = re.compile(r"not ?ready|unreachable|pressure|disk|filesystem|kubelet|node ?down|cordon", re.I)
_NOT_A_NODE = re.compile(r"^\d+\.\d+\.\d+\.\d+(?::\d+)?$")  # an address, not a node name
_PORT = re.compile(r":\d+$")  # `instance: db-1:9100` names host db-1


@dataclass
class AlertTargets:
    """What the alert names. `claims` maps a kind to the names given for it explicitly."""

    claims: dict[str, list[str]] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)  # every name-shaped word, for matching against the cluster
    text: str = ""
    prose: list[str] = field(default_factory=list)  # what the alert says in words: its names, titles, annotations

    def first(self, kind: str) -> str:
        values = self.claims.get(kind) or []
        return values[0] if values else ""

    def node_subject(self) -> str:
        """The node the alert is about when it names a node and no pod or workload; else ""."""
        return "" if self.claims.get("pod") or self.claims.get("workload") else self.first("node")

    def node_trouble(self) -> bool:
        """The alert reports the node itself failing (NotReady, pressure), not pods on it."""
        return bool(self.node_subject() and NODE_TROUBLE.search(" ".join(self.prose)))

    def symptoms(self) -> tuple[str, ...]:
        """The pod states the alert's wording points at, most specific first."""
        lowered = " ".join(self.prose).lower()  # not ids or URLs: an `imageUrl` field is no image-pull symptom
        return tuple(s for pattern, states in SYMPTOMS if re.search(pattern, lowered) for s in states)


def alert_text(message: str) -> str:
    """The alert data inside a task message (the fenced `## Alert` block), else the whole message."""
    match = _FENCED_ALERT.search(message)
    return match.group("body") if match else message


def parse_alert(text: str) -> AlertTargets:
    targets = AlertTargets(text=text)
    structured = _load_mapping(text)
    if structured is not None:
        _walk(structured, targets)
        targets.prose += targets.claims.get("alertname", [])
        text = json.dumps(structured)
    else:
        targets.prose.append(text)
        _read_prose(text, targets)
    targets.words = list(dict.fromkeys(w.strip(".") for w in _NAME.findall(text.lower()) if w not in _STOP))
    return targets


def _read_prose(text: str, targets: AlertTargets) -> None:
    """Claims in free text: `namespace x`, `pod: y`, `shop namespace`, `report-api pods`."""
    before = [m for m in _NAMESPACE_BEFORE.finditer(text) if m.group("value").lower() not in _STOP]
    # "shop namespace: web pods" names shop, not web
    taken = {match.end() - len("namespace") for match in before}
    for match in before:
        _claim(targets, "namespace", match.group("value"))
    for match in _TEXT_CLAIM.finditer(text):
        key, value = match.group("key"), match.group("value").rstrip(".,;:")
        loose = not match.group("sep").strip() and key.lower() not in ("namespace", "ns", "alertname")
        if match.start() not in taken and not (loose and not _NAME_SHAPED.search(value)):
            _claim(targets, key, value)
    for match in _PODS_OF.finditer(text):
        if _NAME_SHAPED.search(match.group("value")) and match.group("value") not in _STOP:
            _claim(targets, "workload", match.group("value"))


def _load_mapping(text: str) -> dict[str, Any] | list[Any] | None:
    """The alert as a JSON/YAML object (or a list of them); None for free text."""
    for load in (json.loads, yaml.safe_load):
        try:
            value = load(text)
        except (ValueError, yaml.YAMLError):
            continue
        if (isinstance(value, dict) and len(value) > 1) or (isinstance(value, list) and value
                                                             and all(isinstance(v, dict) for v in value)):
            return value
    return None


def _walk(value: Any, targets: AlertTargets) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (str, int)) and not isinstance(item, bool):
                _claim(targets, str(key), str(item))
                if str(key).lower() in _PROSE_KEYS and isinstance(item, str):
                    targets.prose.append(item)
                    _read_prose(item, targets)
            elif str(key).lower() == "service" and isinstance(item, dict) and isinstance(item.get("summary"), str):
                _named_service(item["summary"], targets)  # PagerDuty: the service the incident belongs to
            else:
                _walk(item, targets)
    elif isinstance(value, list):
        for item in value:
            _walk(item, targets)


def _named_service(name: str, targets: AlertTargets) -> None:
    """A PagerDuty service named like a workload (`checkout-api`, not "API Service") is one more candidate."""
    if _K8S_NAME.fullmatch(name) and _NAME_SHAPED.search(name):
        _claim(targets, "workload", name)


def _claim(targets: AlertTargets, key: str, value: str) -> None:
    lowered = key.lower()
    kind = next((kind for kind, keys in _KEYS.items() if lowered in keys), None)
    if kind is None or not value.strip():
        return
    if kind == "node":
        if _NOT_A_NODE.search(value):
            return
        value = _PORT.sub("", value)
    if kind != "alertname":
        value = value.lower()
    names = targets.claims.setdefault(kind, [])
    if value not in names:
        names.append(value)
