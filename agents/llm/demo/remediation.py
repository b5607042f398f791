"""The demo investigator as an action agent: the fix the previous stage's root cause points at, proposed for a
person's approval with the evidence and a read that shows it worked, then the report of what was decided and seen.

It acts only on a cause the investigation determined (never on a stand-in for what the alert names) and only where
one change of the cluster fixes it: a memory limit under which a pod is OOM-killed, a CPU limit it is throttled at,
a rollout whose image does not exist. Anything else is reported with the reason no action was proposed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agents.llm.types import LLMRequest
from agents.prompts.stage_context import RESULT_END, RESULT_START

from .evidence import Conversation, load_yaml, workload_of
from .investigator import LABEL, Action

WRITE_TOOLS = ("resources_set_limits", "rollout_undo", "rollout_restart", "resources_scale")
PREVIOUS = "Previous stage results"
_ROOT_CAUSE = re.compile(r"^\*\*Root cause:\*\*\s*(?P<cause>.+)$", re.M)
_OOM = re.compile(r"`(?P<pod>[a-z0-9][\w.\-]*)` is (?:being )?\*\*OOMKilled\*\* at its (?P<limit>\d+)(?P<unit>Mi|Gi)")
_THROTTLED = re.compile(r"`(?P<pod>[a-z0-9][\w.\-]*)` is \*\*CPU-throttled\*\* at its (?P<limit>\d+)m CPU limit")
_BAD_IMAGE = re.compile(r"`(?P<pod>[a-z0-9][\w.\-]*)` is in \*\*(?:ImagePullBackOff|ErrImagePull)\*\*")
_UNDO = re.compile(r"kubectl rollout undo deployment/(?P<name>[a-z0-9][\w.\-]*) -n (?P<namespace>[a-z0-9][\w\-]*)")
_NEWS = re.compile(r"^Action \S+ \((?P<call>[^)]*)\) (?P<said>.*)", re.S)
_CITED = re.compile(r"\[E\d+\]")
_FENCED = re.compile(r"^(?P<fence>`{3,})[^\n]*\n(?P<body>.*?)\n(?P=fence)\s*$", re.S | re.M)


@dataclass
class Fix:
    """One change that fixes the root cause: the tool, its arguments, and the read that shows it worked."""

    tool: str
    arguments: dict[str, Any]
    kind: str
    name: str
    namespace: str
    effect: str
    why: str
    expect: str = ""  # filled from the read before proposing
    verify_arguments: dict[str, Any] = field(default_factory=dict)


def is_remediation(conv: Conversation) -> bool:
    return any(tool in conv.tools for tool in WRITE_TOOLS)


def previous_analysis(conv: Conversation) -> str:
    """The earlier stages' results (the investigation): not the alert above them, nor the task below."""
    if f"## {PREVIOUS}" not in conv.alert:
        return ""
    block = conv.alert.split(f"## {PREVIOUS}", 1)[1]
    if RESULT_START in block:
        return block.split(RESULT_START, 1)[1].split(RESULT_END, 1)[0]
    fenced = _FENCED.search(block)
    return fenced.group("body") if fenced else block


def root_cause(previous: str) -> str:
    match = _ROOT_CAUSE.search(previous)
    return match.group("cause").strip() if match else ""


def _namespace_of(pod: str, previous: str) -> str:
    match = re.search(rf"`{re.escape(pod)}` \(namespace `(?P<ns>[a-z0-9][\w\-]*)`\)", previous)
    return match.group("ns") if match else ""


def _workload_kind(pod: str) -> str:
    return "StatefulSet" if re.search(r"-\d+$", pod) else "Deployment"


def plan_fix(previous: str) -> tuple[Fix | None, str]:
    """The fix, or None and why no action is proposed."""
    cause = root_cause(previous)
    if not cause:
        return None, "the investigation stated no root cause"
    if cause.startswith("not visible in the demo cluster") or "all conditions healthy" in cause:
        return None, "nothing to fix: the cluster shows no failure of what the alert names"
    if cause.startswith(("undetermined", "could not verify")):
        return None, "the investigation did not determine the cause of what the alert names; nothing is changed " \
                     "on a guess"
    if match := _OOM.search(cause):
        pod, limit, unit = match["pod"], int(match["limit"]), match["unit"]
        namespace, kind, name = _namespace_of(pod, previous), _workload_kind(pod), workload_of(pod)
        memory = f"{limit * 2}{unit}"
        return Fix("resources_set_limits", {"kind": kind, "name": name, "namespace": namespace, "memory": memory},
                   kind, name, namespace, f"{name}'s pods run with a {memory} memory limit and stay ready",
                   f"`{pod}` is OOM-killed at its {limit}{unit} memory limit"), ""
    if match := _THROTTLED.search(cause):
        pod, limit = match["pod"], int(match["limit"])
        namespace, name = _namespace_of(pod, previous), workload_of(pod)
        cpu = f"{limit * 4}m"
        return Fix("resources_set_limits", {"kind": "Deployment", "name": name, "namespace": namespace, "cpu": cpu},
                   "Deployment", name, namespace, f"{name}'s pods run with a {cpu} CPU limit and are not throttled",
                   f"`{pod}` is CPU-throttled at its {limit}m limit"), ""
    if _BAD_IMAGE.search(cause) and (undo := _UNDO.search(previous)):
        name, namespace = undo["name"], undo["namespace"]
        return Fix("rollout_undo", {"name": name, "namespace": namespace}, "Deployment", name, namespace,
                   f"{name} runs its previous revision's image again", "its rollout asks for an image that does not "
                   "exist"), ""
    return None, "no single change the demo cluster's write tools can make (limits, rollback, restart, scale) fixes " \
                 "this cause; the investigation's recommended actions say what would"


def _read_arguments(fix: Fix) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": fix.kind, "name": fix.name, "namespace": fix.namespace}


def next_remediation(conv: Conversation) -> Action | None:
    """Read the object, then propose the fix; None to conclude."""
    fix, _ = plan_fix(previous_analysis(conv))
    if fix is None or fix.tool not in conv.tools or conv.attempted(fix.tool):
        return None
    reads = conv.attempted("resources_get", name=fix.name)
    if not reads:
        return Action("resources_get", _read_arguments(fix), f"Read {fix.kind} {fix.name} in {fix.namespace} before "
                                                             "proposing a change to it.")
    read = reads[-1]
    if read.is_error:
        return None
    replicas = ((load_yaml(read.text) or {}).get("spec") or {}).get("replicas", 1)
    expect = "reason: NewReplicaSetAvailable" if fix.tool == "rollout_undo" else f"readyReplicas: {replicas}"
    cited = " ".join(dict.fromkeys(_CITED.findall(root_cause(previous_analysis(conv)))))
    justification = (f"{fix.why} {cited} (the investigation's root cause); {fix.kind} {fix.name} as it is now "
                     f"[{read.evidence_id}]." if read.evidence_id else f"{fix.why} {cited}.")
    arguments = {**fix.arguments, "_justification": justification, "_expected_effect": fix.effect,
                 "_verify": {"tool": conv.tools["resources_get"], "arguments": _read_arguments(fix), "expect": expect}}
    return Action(fix.tool, arguments, f"Propose {fix.tool} on {fix.kind} {fix.name}: {fix.effect}.")


def _what(fix: Fix) -> str:
    change = ", ".join(f"{k} `{v}`" for k, v in fix.arguments.items() if k in ("memory", "cpu", "replicas"))
    return f"`{fix.tool}`{' ' + change if change else ''} on {fix.kind} `{fix.name}` (namespace `{fix.namespace}`)"


def _decision(news: str) -> str:
    """What the decision message says, in the report's words, with its evidence cited."""
    evidence = re.search(r"\(evidence ([^)]*)\)", news)
    cites = "".join(f"[{e.strip()}]" for e in (evidence.group(1) if evidence else "").split(",") if e.strip())
    who = re.search(r"(?:approved|REJECTED) by (?P<who>[^\s(.]+)", news)
    by = who["who"] if who else "nobody"
    if "REJECTED" in news:
        return f"rejected by {by}; it did not run"
    if "EXPIRED" in news or "WITHDRAWN" in news:
        return "not decided in time (or withdrawn); it did not run"
    if "NOT verified" in news:
        return f"approved by {by} and ran, but NOT verified: the read does not show the expected state {cites}"
    if "Outcome: verified" in news:
        shows = re.search(r"shows (?P<expect>'[^']*'|\"[^\"]*\")", news)
        expect = shows["expect"] if shows else "the effect"
        return f"approved by {by}, ran and verified: the read shows {expect} {cites}"
    return f"approved by {by} but FAILED {cites}"


def _outcome(request: LLMRequest, conv: Conversation, fix: Fix | None, why_not: str) -> str:
    news = [m.content for m in request.messages if m.role == "user" and _NEWS.match(m.content)]
    if fix is None:
        return f"none proposed: {why_not}"
    if news:
        return f"{_what(fix)}: {_decision(news[-1])}"
    proposed = conv.attempted(fix.tool)
    if proposed and proposed[-1].is_error:
        return f"none: the proposal of {_what(fix)} was refused ({proposed[-1].text.strip()[:300]})"
    if proposed:
        return f"{_what(fix)} proposed, waiting for a decision"
    return f"none proposed: {why_not or 'the cluster did not answer the read'}"


def remediation_report(request: LLMRequest, conv: Conversation) -> str:
    """The root cause exactly as the investigation stated it (the summary repeats it), what was done, then the
    investigation's own evidence and recommendations."""
    previous = previous_analysis(conv)
    fix, why_not = plan_fix(previous)
    cause = root_cause(previous) or "the investigation stated none"
    lines = previous.strip().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("**Root cause:**")), len(lines))
    before = "\n".join(x for x in lines[:start] if not x.startswith("## ") and x != LABEL).strip()  # scope, recall
    return "\n".join(["## Root cause analysis and remediation", "", LABEL, "", *([before, ""] if before else []),
                      f"**Root cause:** {cause}",
                      "", f"**Action:** {_outcome(request, conv, fix, why_not)}", "", *lines[start + 1:]]).rstrip()
