"""The facts the demo investigator has gathered from tool results so far, in the shape its plan and report need."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.quotes import quote

from .alert import AlertTargets, alert_text, parse_alert
from .evidence import (
    MISSING_REFERENCE,
    Conversation,
    EventFact,
    NodeFact,
    PodDetail,
    PodRow,
    dependency_host,
    listed_names,
    load_yaml,
    log_highlights,
    parse_events,
    parse_node,
    parse_pod_detail,
    parse_pod_table,
    unresolved_host,
)
from .focus import Focus, resolve


@dataclass
class Findings:
    targets: AlertTargets = field(default_factory=AlertTargets)
    focus: Focus = field(default_factory=Focus)
    pods: list[PodRow] = field(default_factory=list)
    dependency: PodRow | None = None
    dependency_host: str = ""
    dns_host: str = ""  # a name the logs say does not resolve
    details: dict[str, PodDetail] = field(default_factory=dict)
    logs: dict[str, list[str]] = field(default_factory=dict)
    events: list[EventFact] = field(default_factory=list)
    nodes: dict[str, NodeFact] = field(default_factory=dict)
    objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # resources_get: (kind, name)
    absent: set[tuple[str, str]] = field(default_factory=set)  # resources_get said "not found"
    listed: dict[str, list[str]] = field(default_factory=dict)  # resources_list: kind -> names
    errors: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # "pods_list", "pods_log:<pod>"… → evidence id

    @property
    def primary(self) -> PodRow | None:
        return self.focus.primary

    def cite(self, *keys: str) -> str:
        """The citations of the results behind `keys` (" [E1][E4]"), "" when none has an id."""
        ids = dict.fromkeys(self.sources[key] for key in keys if self.sources.get(key))
        return (" " + "".join(f"[{identifier}]" for identifier in ids)) if ids else ""

    def related_warnings(self) -> list[EventFact]:
        """Warning events on the primary pod, its owners (`web-7d9c8b6f5`, a Job), its claims (`data-<pod>`), the
        dependency and the nodes looked at."""
        pod = self.primary
        names = {*self.nodes, *([pod.name] if pod else []), *([self.dependency.name] if self.dependency else [])}

        def related(obj: str) -> bool:
            owned = pod is not None and (pod.name.startswith(obj + "-") or obj.endswith("-" + pod.name))
            return obj in names or owned or bool(self.dependency_host and self.dependency_host in obj)

        return [e for e in self.events if e.type == "Warning" and related(e.object)]

    def missing_reference(self) -> tuple[str, str]:
        """("Secret", name) when the primary pod cannot start because a Secret/ConfigMap it uses is missing."""
        pod = self.primary
        detail = self.details.get(pod.name) if pod else None
        texts = [detail.waiting_message] if detail else []
        texts += [e.message for e in self.events if pod and e.object == pod.name]
        for text in texts:
            match = MISSING_REFERENCE.search(text)
            if match:
                kind = "Secret" if match.group("kind").lower() == "secret" else "ConfigMap"
                return kind, match.group("name")
        return "", ""


def _resource_key(obs_arguments: dict[str, Any]) -> tuple[str, str]:
    return str(obs_arguments.get("kind", "")), str(obs_arguments.get("name", ""))


def gather(conv: Conversation) -> Findings:
    found = Findings(targets=parse_alert(alert_text(conv.alert)))
    for obs in conv.observations:
        if obs.short == "resources_get" and obs.is_error and "not found" in obs.text:
            found.absent.add(_resource_key(obs.arguments))
            found.sources[f"resources_get:{obs.arguments.get('kind')}/{obs.arguments.get('name')}"] = obs.evidence_id
            continue
        if obs.is_error:
            first = quote(obs.text.strip().splitlines()[0], 200) if obs.text.strip() else ""
            found.errors.append(f"`{obs.short}` failed: {first}" + (f" [{obs.evidence_id}]" if obs.evidence_id else ""))
            continue
        _record(found, obs.short, obs.arguments, obs.text, obs.evidence_id)
    found.focus = resolve(found.targets, found.pods)
    node = found.nodes.get(found.focus.node)
    if node is not None and not node.problems and found.targets.node_trouble():
        found.focus.primary = None  # a healthy node is the answer to a node alert; its pods' failures are not
    if found.primary and found.dependency_host:
        found.dependency = _pod_for_host(found.pods, found.dependency_host, found.primary.namespace)
    return found


def _record(found: Findings, short: str, arguments: dict[str, Any], text: str, evidence_id: str) -> None:
    if short in ("pods_list", "pods_list_in_namespace"):
        found.pods = parse_pod_table(text) or found.pods
        found.sources["pods_list"] = evidence_id
    elif short == "pods_get":
        detail = parse_pod_detail(text)
        if detail:
            found.details[detail.name] = detail
            found.sources[f"pods_get:{detail.name}"] = evidence_id
    elif short == "pods_log":
        name = str(arguments.get("name", ""))
        found.logs[name] = log_highlights(text)
        found.sources[f"pods_log:{name}"] = evidence_id
        found.dependency_host = found.dependency_host or dependency_host(text)
        found.dns_host = found.dns_host or unresolved_host(text)
    elif short == "events_list":
        found.events = parse_events(text)
        found.sources["events_list"] = evidence_id
    elif short == "resources_get":
        kind, name = _resource_key(arguments)
        node = parse_node(text) if kind == "Node" else None
        if node:
            found.nodes[node.name] = node
        value = load_yaml(text)
        if isinstance(value, dict):
            found.objects[(kind, name)] = value
        found.sources[f"resources_get:{kind}/{name}"] = evidence_id
    elif short == "resources_list":
        kind = str(arguments.get("kind", ""))
        found.listed[kind] = listed_names(text)
        found.sources[f"resources_list:{kind}"] = evidence_id


def _pod_for_host(pods: list[PodRow], host: str, namespace: str) -> PodRow | None:
    candidates = [p for p in pods if p.name == host or p.name.startswith(host + "-")]
    candidates.sort(key=lambda p: p.namespace != namespace)
    return candidates[0] if candidates else None
