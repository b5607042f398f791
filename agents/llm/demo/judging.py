"""The demo provider as scorer and as reflector: rules over the scoring and reflection prompts' data blocks, no LLM.

Scoring: how far the analysis rests on tool results the session holds (its citations), whether it determined a
cause, and whether it says what to do. Reflection: the determined root cause of a session whose analysis is not
rated inaccurate, as one `incident` memory scoped to its namespace and workload, citing only evidence ids the
session's tool results carry (a cause without them, or resting on the alert text alone, teaches nothing).
"""

from __future__ import annotations

import json
import re

from .evidence import workload_of

LABEL = "(Rule-based, by the built-in demo provider.)"
_ROOT_CAUSE = re.compile(r"^\*\*Root cause:\*\*\s*(?P<cause>.+)$", re.M)
_ACTION = re.compile(r"^\*\*Action:\*\*\s*(?P<action>.+)$", re.M)
_EVIDENCE_ENTRY = re.compile(r"^\[(E\d+)\] ", re.M)
_CITED = re.compile(r"\[(E\d+)\]")
_FIRST_ACTION = re.compile(r"^### Recommended actions\n1\. (?P<action>.+)$", re.M)
_NAMESPACE = re.compile(r"`(?P<pod>[a-z0-9][\w.\-]*)` \(namespace `(?P<ns>[a-z0-9][\w\-]*)`\)")
_RATING = re.compile(r"^Rating:\s*(?P<rating>\S+)", re.M)
_FENCED = re.compile(r"^(?P<fence>`{3,})[^\n]*\n(?P<body>.*?)\n(?P=fence)\s*$", re.S | re.M)
UNDETERMINED = ("undetermined", "could not verify")


def section(prompt: str, title: str) -> str:
    """The data of the prompt's `## title` block: its fenced body, else everything after the heading."""
    start = prompt.find(f"## {title}\n")
    if start < 0:
        return ""
    rest = prompt[start + len(title) + 4:]
    fenced = _FENCED.search(rest)
    return fenced.group("body") if fenced else rest


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[*`]", "", _CITED.sub("", text))).strip().rstrip(". ")


# ---- scoring ----------------------------------------------------------------------------------


def score(prompt: str) -> str:
    """The scorer's JSON verdict (tarsy.pipeline.scoring.rubric)."""
    analysis = section(prompt, "Final analysis")
    evidence = set(_EVIDENCE_ENTRY.findall(section(prompt, "Evidence")))
    cited = set(_CITED.findall(analysis))
    match = _ROOT_CAUSE.search(analysis)
    cause = match.group("cause") if match else ""
    tags: list[str] = []
    if not evidence:
        support, points, said = "unsupported", 20, "No tool was called: the conclusion rests on the alert alone."
        tags.append("no_tool_evidence")
    elif cited - evidence:
        support, points = "partly", 40
        said = f"It cites evidence the session does not hold ({', '.join(sorted(cited - evidence))})."
        tags.append("invalid_citation")
    elif not cause or not _CITED.search(cause):
        support, points, said = "partly", 45, "Its root cause points at no tool result."
        tags.append("uncited_claim")
    elif cause.startswith(UNDETERMINED):
        support, points = "partly", 55
        said = ("It says the cluster lacks what the alert names rather than guessing, and shows the cluster's own "
                "failure with the tool results behind it.")
    else:
        support, points = "supported", 85
        said = f"Its root cause cites {len(set(_CITED.findall(cause)))} tool results the session holds."
        action = _ACTION.search(analysis)
        if action and "verified" in action.group("action") and "NOT verified" not in action.group("action"):
            points, said = 90, said + " The fix was approved, ran and was verified."
    if not _FIRST_ACTION.search(analysis) and not _ACTION.search(analysis):
        tags.append("vague_remediation")
        points -= 5
    rationale = f"{said} {LABEL}"
    return json.dumps({"support": support, "score": points, "rationale": rationale, "tags": tags})


# ---- reflection -------------------------------------------------------------------------------


def reflect(prompt: str) -> str:
    """The reflector's JSON: at most one memory, from evidence only."""
    analysis = section(prompt, "Final analysis")
    review = section(prompt, "Engineer's review")
    rating = _RATING.search(review)
    match = _ROOT_CAUSE.search(analysis)
    if (rating and rating.group("rating").lower().startswith("inaccurate")) or not match:
        return json.dumps({"memories": []})
    cause = match.group("cause")
    evidence = set(_EVIDENCE_ENTRY.findall(section(prompt, "Evidence")))
    action = _ACTION.search(analysis)
    ids = [i for i in dict.fromkeys(_CITED.findall(cause + (action.group("action") if action else "")))
           if i in evidence]
    named = re.search(r"`(?P<pod>[a-z0-9][\w.\-]*)`", cause)  # what the cause is about, e.g. the OOM-killed database
    places = {m.group("pod"): m.group("ns") for m in _NAMESPACE.finditer(analysis)}
    if cause.startswith(UNDETERMINED) or not ids or named is None or named.group("pod") not in places:
        return json.dumps({"memories": []})
    pod = named.group("pod")
    namespace = places[pod]
    workload = workload_of(pod)
    text = f"{workload} in namespace {namespace}: {_plain(cause)}."
    if action and "verified" in action.group("action") and "NOT verified" not in action.group("action"):
        text += f" Fixed by {_plain(action.group('action')).split(': approved')[0]}, approved and verified."
        # e.g. "Fixed by resources_set_limits memory 512Mi on StatefulSet orders-db (namespace shop), approved …"
    elif first := _FIRST_ACTION.search(analysis):
        text += f" Suggested fix: {_plain(first.group('action'))}."
    return json.dumps({"memories": [{"kind": "incident", "text": text, "evidence_ids": ids,
                                     "labels": {"namespace": namespace, "service": workload}}]})
