"""Which pod (and node) the demo investigator looks at, from what the alert names and what the pod list shows.

The alert's own resources come first: a named pod, else the pods of a named workload, node or namespace.
A name the cluster does not have is written down (the report says so) instead of being silently replaced; only
then does the choice fall back to the cluster's failing pods, the ones whose state fits the alert's wording first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .alert import AlertTargets
from .evidence import BAD_STATUSES, PodRow


@dataclass
class Focus:
    primary: PodRow | None = None
    node: str = ""  # a node the alert names and the cluster has
    why: str = ""  # how the primary pod was chosen, for the report
    notes: list[str] = field(default_factory=list)  # the alert's resources the cluster lacks

    @property
    def healthy(self) -> bool:
        """The alert's own pod shows no failure."""
        return self.primary is not None and not self.primary.unhealthy


def _rank(pod: PodRow, symptoms: tuple[str, ...]) -> tuple[int, bool, int, int]:
    states = pod.states()
    fit = next((i for i, symptom in enumerate(symptoms) if symptom in states), len(symptoms))
    severity = BAD_STATUSES.index(pod.status) if pod.status in BAD_STATUSES else len(BAD_STATUSES)
    return fit, not pod.unhealthy, severity, -pod.restarts


def _pick(pods: list[PodRow], symptoms: tuple[str, ...]) -> PodRow | None:
    return min(pods, key=lambda p: _rank(p, symptoms)) if pods else None


def _where(namespace: str) -> str:
    return f" in namespace `{namespace}`" if namespace else " in any namespace"


def resolve(targets: AlertTargets, pods: list[PodRow]) -> Focus:
    focus = Focus()
    symptoms = targets.symptoms()
    namespaces = {p.namespace for p in pods}
    claimed = targets.claims.get("namespace", [])
    namespace = next((n for n in claimed if n in namespaces), "")
    scope = [p for p in pods if p.namespace == namespace] if namespace else pods
    if claimed and not namespace:
        focus.notes.append(f"the demo cluster has no pods in namespace `{claimed[0]}`")
    pod_name = targets.first("pod")
    if pod_name:
        named = sorted((p for p in pods if p.name == pod_name), key=lambda p: p.namespace != namespace)
        if named:
            focus.primary, focus.why = named[0], "the pod the alert names"
            if namespace and named[0].namespace != namespace:
                focus.notes.append(f"pod `{pod_name}` is in namespace `{named[0].namespace}`, not `{namespace}`")
            return focus
        focus.notes.append(f"the demo cluster has no pod `{pod_name}`{_where(namespace or targets.first('namespace'))}")
    for word in targets.words:  # a pod named in the alert's free text
        exact = [p for p in scope if p.name == word]
        if exact and not pod_name:
            focus.primary, focus.why = exact[0], "the pod the alert names"
            return focus
    for workload in targets.claims.get("workload", []):
        group = [p for p in scope if p.belongs_to(workload)]
        if group:
            focus.primary, focus.why = _pick(group, symptoms), f"a pod of `{workload}`, which the alert names"
            return focus
        focus.notes.append(f"the demo cluster has no workload `{workload}`{_where(namespace)}")
    node = targets.first("node")
    if node and any(p.node == node for p in pods):
        focus.node = node  # the node is the subject; one of its pods only when it is failing
        focus.primary = _pick([p for p in pods if p.node == node and p.unhealthy], symptoms)
        focus.why = f"the failing pod on node `{node}` (named by the alert) that fits the alert best"
        return focus
    if node:
        focus.notes.append(f"the demo cluster has no node `{node}`")
    if not focus.notes:  # names in free text: a workload ("orders-db unhealthy"), else a namespace
        for word in targets.words:
            group = [p for p in scope if p.belongs_to(word)]
            if group:
                focus.primary, focus.why = _pick(group, symptoms), f"a pod of `{word}`, which the alert names"
                return focus
        if namespace:
            focus.primary = _pick(scope, symptoms)
            focus.why = f"the pod in namespace `{namespace}` (named by the alert) that fits the alert best"
            return focus
    own = [p for p in scope if p.unhealthy] if namespace else []
    focus.primary = _pick(own or [p for p in pods if p.unhealthy], symptoms)
    focus.why = (f"the failing pod of namespace `{namespace}` (named by the alert)" if own
                 else "the failing pod of the demo cluster that fits the alert best")
    return focus
