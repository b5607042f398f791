"""Finding the identifiers in a text: what becomes a placeholder before a model sees it.

Four sources, in this order (a value keeps the kind it was first found as):
- configured patterns (`privacy.patterns`, e.g. customer ids), by regular expression;
- structured data: a fenced JSON block (alert data, kubernetes MCP output) walked for Kubernetes-shaped fields
  (an object's `kind` with `metadata.name`/`namespace`, `nodeName`, `hostIP`, `podIP`, owner references, labels);
- `key: value` / `key=value` / `"key": "value"` pairs whose key names an identifier (namespace, pod, node,
  cluster, host, service, deployment…), as alert labels and YAML or JSON output carry them;
- IPv4 addresses and e-mail addresses, by pattern.

Free prose is not guessed at: a name the model must not see reaches it replaced once it is known, from any of
the sources above, in any message of the session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from agents.config.schema import PseudonymPattern

# Identifier kinds and the placeholder prefix each gets: `<pod:7>`, `<ns:2>`.
CLUSTER, NAMESPACE, WORKLOAD, POD, NODE, HOST, SERVICE, IP, EMAIL = (
    "cluster", "ns", "workload", "pod", "node", "host", "svc", "ip", "email")

# Field names (lower case, `_`/`-` removed) whose value is an identifier of that kind.
KEY_KINDS: dict[str, str] = {
    "cluster": CLUSTER, "clustername": CLUSTER, "kubernetescluster": CLUSTER,
    "namespace": NAMESPACE, "kubernetesnamespace": NAMESPACE, "ns": NAMESPACE,
    "pod": POD, "podname": POD, "kubernetespodname": POD,
    "node": NODE, "nodename": NODE, "kubernetesnode": NODE,
    "host": HOST, "hostname": HOST, "instance": HOST,
    "service": SERVICE, "servicename": SERVICE, "svc": SERVICE,
    "deployment": WORKLOAD, "statefulset": WORKLOAD, "daemonset": WORKLOAD, "replicaset": WORKLOAD,
    "workload": WORKLOAD, "jobname": WORKLOAD, "cronjob": WORKLOAD,
    "hostip": IP, "podip": IP,
}
# Kubernetes object kinds → the placeholder kind of their `metadata.name`.
OBJECT_KINDS: dict[str, str] = {
    "pod": POD, "node": NODE, "namespace": NAMESPACE, "service": SERVICE,
    "deployment": WORKLOAD, "statefulset": WORKLOAD, "daemonset": WORKLOAD, "replicaset": WORKLOAD,
    "job": WORKLOAD, "cronjob": WORKLOAD,
}
# Values that are vocabulary rather than a name anyone could be traced by; replacing them would only blur the text.
NOT_IDENTIFIERS = frozenset({"default", "true", "false", "none", "null", "localhost", "kubernetes", "unknown",
                             "pod", "node", "service", "namespace", "cluster", "host", "deployment"})
MIN_LENGTH = 3  # shorter values ("a", "db") are too common in prose to replace without garbling it

PLACEHOLDER_RE = re.compile(r"<([a-z][a-z0-9_]{0,15}):(\d{1,6})>")
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
IPV4_RE = re.compile(rf"(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?!\w|\.\d)")
EMAIL_RE = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")
_KEY_NAMES = "|".join(sorted({re.escape(k) for k in (
    "cluster", "cluster_name", "namespace", "kubernetes_namespace", "pod", "pod_name", "podName", "kubernetes_pod_name",
    "node", "node_name", "nodeName", "kubernetes_node", "host", "hostname", "instance", "service", "service_name",
    "deployment", "statefulset", "daemonset", "replicaset", "workload", "job_name", "cronjob", "hostIP", "podIP",
)}, key=len, reverse=True))
KEY_VALUE_RE = re.compile(
    rf"""(?<![\w.-])["']?({_KEY_NAMES})["']?\s*[:=]\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9])""",
    re.IGNORECASE)
_PORT_RE = re.compile(r":\d{1,5}$")
FENCED_RE = re.compile(r"^(`{3,})text\n(.*?)\n\1$", re.MULTILINE | re.DOTALL)
WALK_LIMIT = 20_000  # objects walked per block: a huge listing is still covered by the key-value pass


def find(text: str, patterns: Iterable[PseudonymPattern] = ()) -> Iterator[tuple[str, str]]:
    """(kind, value) for every identifier found in `text`, possibly repeated; placeholders are never found."""
    for pattern in patterns:
        for match in re.finditer(pattern.pattern, text):
            yield pattern.kind, match.group(0)
    for block in FENCED_RE.finditer(text):
        yield from _structured(block.group(2))
    for match in KEY_VALUE_RE.finditer(text):
        kind = KEY_KINDS[_key(match.group(1))]
        value = match.group(2).rstrip(".")
        if kind == HOST and IPV4_RE.fullmatch(value):
            kind = IP
        yield kind, value
    for match in IPV4_RE.finditer(text):
        yield IP, match.group(0)
    for match in EMAIL_RE.finditer(text):
        yield EMAIL, match.group(0)


def is_identifier(value: str) -> bool:
    return len(value) >= MIN_LENGTH and value.lower() not in NOT_IDENTIFIERS and not PLACEHOLDER_RE.search(value)


def _key(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def _structured(block: str) -> Iterator[tuple[str, str]]:
    start = block.lstrip()[:1]
    if start not in ("{", "["):
        return
    try:
        data = json.loads(block)
    except ValueError:
        return
    stack: list[Any] = [data]
    walked = 0
    while stack and walked < WALK_LIMIT:
        node = stack.pop()
        walked += 1
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            yield from _object(node)
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))


def _object(obj: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """One JSON object's identifiers: a Kubernetes object's own name by its kind, and identifier-named fields."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        object_kind = OBJECT_KINDS.get(str(obj.get("kind", "")).lower())
        if object_kind and isinstance(metadata.get("name"), str):
            yield object_kind, metadata["name"]
        if isinstance(metadata.get("namespace"), str):
            yield NAMESPACE, metadata["namespace"]
    owner_kind = OBJECT_KINDS.get(str(obj.get("kind", "")).lower()) if "uid" in obj and "metadata" not in obj else None
    if owner_kind and isinstance(obj.get("name"), str):  # an ownerReferences entry
        yield owner_kind, obj["name"]
    for key, value in obj.items():
        kind = KEY_KINDS.get(_key(str(key)))
        if kind and isinstance(value, str):
            name = _PORT_RE.sub("", value) if kind == HOST else value  # Prometheus `instance`: host:port
            yield (IP if kind == HOST and IPV4_RE.fullmatch(name) else kind), name
