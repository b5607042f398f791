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
_NOT_A_NODE = re.compile(r"^\d+\.\d+\.\d+\.\d+(?::\d+)?$|:\d+$")


@dataclass
class AlertTargets:
    """What the alert names. `claims` maps a kind to the names given for it explicitly."""

    claims: dict[str, list[str]] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)  # every name-shaped word, for matching against the cluster
    text: str = ""

    def first(self, kind: str) -> str:
        values = self.claims.get(kind) or []
        return values[0] if values else ""

    def symptoms(self) -> tuple[str, ...]:
        """The pod states the alert's wording points at, most specific first."""
        lowered = self.text.lower()
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
        text = json.dumps(structured)
    else:
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
    targets.words = list(dict.fromkeys(w.strip(".") for w in _NAME.findall(text.lower()) if w not in _STOP))
    return targets


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
            else:
                _walk(item, targets)
    elif isinstance(value, list):
        for item in value:
            _walk(item, targets)


def _claim(targets: AlertTargets, key: str, value: str) -> None:
    lowered = key.lower()
    kind = next((kind for kind, keys in _KEYS.items() if lowered in keys), None)
    if kind is None or not value.strip():
        return
    if kind == "node" and _NOT_A_NODE.search(value):
        return
    if kind != "alertname":
        value = value.lower()
    names = targets.claims.setdefault(kind, [])
    if value not in names:
        names.append(value)
