"""The demo investigator's scheduled checks: list the pods the check names, then a verdict from what came back.

A check that names a namespace ("every pod in namespace `payments` …") is answered from that namespace's pods,
else from every pod listed. Deterministic: the same tool output always gives the same verdict, so a test (or a
demo) flips a check from healthy to failing by changing what the cluster answers.
"""

from __future__ import annotations

import re

from agents.prompts.checks import VERDICT_HEALTHY, VERDICT_PROBLEM

from .evidence import Conversation, PodRow
from .findings import Findings

CHECK_MARK = "## Scheduled check"  # the heading of a check's task (agents/prompts/templates/check_task.md)
_NAMESPACE = re.compile(r"\bnamespace\s+[`'\"]?([a-z0-9][a-z0-9-]{0,62})\b", re.IGNORECASE)
_NAME = re.compile(r"the check `([^`]+)`")


def is_check(conv: Conversation) -> bool:
    return CHECK_MARK in conv.alert


def _namespace(conv: Conversation) -> str:
    match = _NAMESPACE.search(conv.alert.split(CHECK_MARK, 1)[1])
    return match.group(1) if match else ""


def check_action(conv: Conversation) -> tuple[str, dict[str, str], str] | None:
    """(tool, arguments, thought) of the one call a check needs, or None once it is made (or impossible)."""
    if conv.attempted("pods_list_in_namespace") or conv.attempted("pods_list"):
        return None
    namespace = _namespace(conv)
    if namespace and "pods_list_in_namespace" in conv.tools:
        return "pods_list_in_namespace", {"namespace": namespace}, f"List the pods in {namespace} to verify them."
    if "pods_list" in conv.tools:
        return "pods_list", {}, "List every pod to verify the check."
    return None


def _row(pod: PodRow) -> str:
    return f"`{pod.name}` ({pod.namespace}) {pod.status}, ready {pod.ready}, {pod.restarts} restarts"


def check_report(conv: Conversation, found: Findings, label: str) -> str:
    namespace = _namespace(conv)
    pods = [p for p in found.pods if not namespace or p.namespace == namespace]
    match = _NAME.search(conv.alert)
    scope = f"namespace `{namespace}`" if namespace else "the cluster"
    lines = [f"## Scheduled check{': ' + match.group(1) if match else ''}", "", label, "",
             f"**Checked:** every pod in {scope}{found.cite('pods_list')}."]
    failing = [p for p in pods if p.unhealthy]
    if found.errors or not pods:
        lines += ["", "**Problem:** the check could not be verified: "
                  + ("; ".join(found.errors) if found.errors else f"no pod found in {scope}") + ".",
                  "", VERDICT_PROBLEM]
        return "\n".join(lines)
    lines += [f"- {_row(p)}" for p in pods]
    if failing:
        lines += ["", f"**Problem:** {len(failing)} of {len(pods)} pods are not healthy: "
                  + "; ".join(_row(p) for p in failing) + ".", "", VERDICT_PROBLEM]
    else:
        lines += ["", f"All {len(pods)} pods are running and ready, none restarted.", "", VERDICT_HEALTHY]
    return "\n".join(lines)
