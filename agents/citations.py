"""Evidence citations: the ids the model sees next to its evidence, how an analysis cites them, and the check.

Evidence ids name what an analysis may rest on:

- `E<n>` — one tool result of the session (what the model was given back for one tool call). The number is
  assigned when the result is recorded, from a counter on the session, so it is unique within the session
  across stages and parallel agents, and it never changes. Numbers of an interrupted attempt that was
  discarded are not reused (gaps are possible). `E7` of one session is not evidence in another.
- `M<n>` — a memory from past investigations (tarsy.models.Memory id n) that this session's prompts carried
  (its `memory.recalled` events list them); citing one the session was not given is invalid.
- `A:<path>` — a field of the alert: a key of the alert's JSON object, dotted for nested keys
  (`A:labels.namespace`), a number for a list position (`A:pods.0`). A text (non-JSON) alert has no fields.

An analysis cites them in square brackets — `[E7]`, `[E3, E7]`, `[E3][A:namespace]` — for every finding.
`verify_citations` checks each cited id without any LLM: it must be a tool result of this session, or a field
of this session's alert. Two things are "uncited": `uncited` lists the session's tool results the analysis never
cites (evidence it ignored or did not need), `uncited_findings` the analysis's findings that cite nothing
(claims without support; what a finding is, is defined at `uncited_findings`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

_ID = r"(?:E\d+|M\d+|A:[^\s\[\],;<>&\"']+)"  # a field path has no markup characters: it reads the same in HTML
EVIDENCE_ID = re.compile(r"E(\d+)")
CITATION = re.compile(rf"\[\s*({_ID}(?:\s*[,;]\s*{_ID})*)\s*\]")
_ONE_ID = re.compile(_ID)
EVIDENCE_LABEL = re.compile(r"\bevidence \[(E\d+)\]", re.IGNORECASE)  # how prompts present an id with its result

# Why a cited id is invalid (stored, shown in the API and on the dashboard).
NOT_IN_SESSION = "not_in_session"  # no tool result of this session has that id (another session's, or made up)
NO_ALERT_FIELD = "no_alert_field"  # the alert has no such field
NOT_RECALLED = "not_recalled"  # no memory of that id was recalled for this session


def evidence_id(number: int) -> str:
    return f"E{number}"


def cite(identifier: str) -> str:
    """How the analysis writes a citation of `identifier`."""
    return f"[{identifier}]"


def cited_ids(text: str) -> list[str]:
    """Every id the text cites, once each, in order of first citation."""
    seen: dict[str, None] = {}
    for group in CITATION.finditer(text or ""):
        for identifier in _ONE_ID.findall(group.group(1)):
            seen.setdefault(identifier.rstrip(".:"), None)
    return list(seen)


def evidence_shown(text: str) -> list[str]:
    """The evidence ids a prompt presents ("Evidence [E3]", "evidence [E3]"), once each, in order."""
    return list(dict.fromkeys(EVIDENCE_LABEL.findall(text or "")))


def alert_field(alert_data: str, path: str) -> bool:
    """Whether `path` (dotted keys, numbers for list positions) names a field of the alert's JSON object."""
    try:
        value: Any = json.loads(alert_data)
    except (TypeError, ValueError):
        return False
    if not isinstance(value, dict) or not path:
        return False
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False
    return True


@dataclass(frozen=True)
class Evidence:
    """One tool result of the session, as the check and the dashboard need it."""

    id: str  # E<n>
    event_id: int  # the timeline event holding it
    tool: str = ""  # server.tool
    is_error: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": "tool_result", "event_id": self.event_id, "tool": self.tool,
                "is_error": self.is_error}


def verify_citations(analysis: str, evidence: list[Evidence], alert_data: str,
                     recalled: Collection[str] = ()) -> dict[str, Any]:
    """The deterministic check of an analysis's citations against the session's evidence, alert and recalled
    memories (`recalled`: "M<n>" ids).

    Returns `{"valid", "invalid", "uncited", "cited_count", "evidence_count"}`: valid and invalid cited ids in
    order of first citation (invalid ones with a `reason`), and the session's tool results never cited."""
    by_id = {item.id: item for item in evidence}
    valid: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    cited = cited_ids(analysis)
    for identifier in cited:
        if identifier.startswith("A:"):
            if alert_field(alert_data, identifier[2:]):
                valid.append({"id": identifier, "kind": "alert_field", "field": identifier[2:]})
            else:
                invalid.append({"id": identifier, "kind": "alert_field", "reason": NO_ALERT_FIELD})
        elif identifier.startswith("M"):
            entry = {"id": identifier, "kind": "memory", "memory_id": int(identifier[1:])}
            (valid if identifier in recalled else invalid).append(
                entry if identifier in recalled else {**entry, "reason": NOT_RECALLED})
        elif identifier in by_id:
            valid.append(by_id[identifier].as_dict())
        else:
            invalid.append({"id": identifier, "kind": "tool_result", "reason": NOT_IN_SESSION})
    uncited = [item.as_dict() for item in evidence if item.id not in cited]
    return {"valid": valid, "invalid": invalid, "uncited": uncited, "cited_count": len(cited),
            "evidence_count": len(evidence), "uncited_findings": uncited_findings(analysis)}


# ---- findings without a citation ------------------------------------------------------------------------------

MIN_FINDING_WORDS = 8  # shorter blocks are labels and headings ("Root cause:", "Impact: none"), not claims
FINDING_PREVIEW_CHARS = 200
_NOT_FINDINGS = re.compile(r"recommend|next step|action|remediation|mitigation|follow[- ]up|prevent", re.I)
_HEADING = re.compile(r"^\s{0,3}(#{1,6}\s+(?P<title>.*)|(?P<bold>\*\*[^*]+\*\*|__[^_]+__)\s*:?\s*)$")
_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+")
_CONTINUATION = re.compile(r"^(?:\s{2,}|\s*>)")
_EMPHASIS_ONLY = re.compile(r"^(?:_[^_].*_|\*[^*].*\*)$", re.S)


def _blocks(analysis: str) -> list[tuple[str, str]]:
    """(section title, text) of every paragraph and list item, continuation lines (indented, quoted) included."""
    blocks: list[tuple[str, str]] = []
    section, current, fenced = "", None, False
    for line in (analysis or "").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            current = None
            continue
        heading = _HEADING.match(line)
        if fenced or not line.strip() or heading:
            if heading:
                section = heading.group("title") or heading.group("bold") or ""
            current = None
            continue
        if current is not None and (_CONTINUATION.match(line) or not _LIST_ITEM.match(line)):
            blocks[current] = (section, f"{blocks[current][1]}\n{line.strip()}")
            continue
        blocks.append((section, _LIST_ITEM.sub("", line).strip()))
        current = len(blocks) - 1
    return blocks


def uncited_findings(analysis: str) -> list[dict[str, str]]:
    """The analysis's findings that cite nothing. A finding is a paragraph or list item of at least
    MIN_FINDING_WORDS words outside sections of recommendations or next steps (advice, not claims), that is not
    wholly emphasised (a note such as a disclaimer). Code blocks are not findings."""
    found = []
    for section, text in _blocks(analysis):
        if _NOT_FINDINGS.search(section) or _EMPHASIS_ONLY.match(text) or CITATION.search(text):
            continue
        if len(text.split()) >= MIN_FINDING_WORDS:
            found.append({"text": text if len(text) <= FINDING_PREVIEW_CHARS
                          else text[:FINDING_PREVIEW_CHARS - 1].rstrip() + "…"})
    return found
