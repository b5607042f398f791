"""The scoring rubric: the tag vocabulary, the support bands, reading the scorer's reply and combining it with the
deterministic signals. Plain Python, no database: the same reply and signals always give the same score."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tarsy.models.quality import FAILURE_TAGS
from tarsy.models.quality import SUPPORT_BANDS as BANDS

SupportLevel = Literal["supported", "partly", "unsupported"]
_RANK = {"unsupported": 0, "partly": 1, "supported": 2}


UNCITED_FINDING_PENALTY = 5  # per finding that points at no evidence
MAX_CITATION_PENALTY = 15  # also when evidence was gathered and nothing at all is cited
TOOL_FAILURE_PENALTY = 5  # most tool calls failed
BUDGET_PENALTY = 10  # a forced conclusion had no room to check itself
REPLY_PREVIEW_CHARS = 200


class ScoringError(Exception):
    """Scoring could not produce a score (scorer failed or answered something unusable); stored, never raised on."""


class Verdict(BaseModel):
    """The scorer's reply, as the rubric prompt asks for it."""

    model_config = ConfigDict(extra="ignore")

    score: int = Field(ge=0, le=100)
    support: SupportLevel
    rationale: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)

    @field_validator("support", mode="before")
    @classmethod
    def _normalise_support(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower().replace("partially supported", "partly").replace("partially", "partly")
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _normalise_tags(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        return [str(t).strip().lower().replace("-", "_").replace(" ", "_") for t in value] if isinstance(
            value, list) else value


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _json_objects(text: str):
    """Every JSON object in the text, fenced blocks first, then any `{…}` found by scanning."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start in [i for i, ch in enumerate(candidate) if ch == "{"]:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                yield value


def parse_verdict(text: str) -> Verdict:
    """The first JSON object in the reply that is a valid verdict; a ScoringError that says why otherwise."""
    if not text.strip():
        raise ScoringError("the scorer returned an empty reply")
    problem = ""
    for obj in _json_objects(text):
        if "score" not in obj:
            continue
        try:
            return Verdict.model_validate(obj)
        except ValidationError as exc:
            problem = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in exc.errors())
    preview = " ".join(text.split())[:REPLY_PREVIEW_CHARS]
    if problem:
        raise ScoringError(f"the scorer's verdict is invalid ({problem}): {preview!r}")
    raise ScoringError(f"the scorer's reply holds no JSON verdict with a score: {preview!r}")


@dataclass
class Scored:
    """The combined result: what is stored and shown."""

    score: int
    support: str
    tags: list[str]
    adjustments: list[str] = field(default_factory=list)
    unknown_tags: list[str] = field(default_factory=list)


def _cap(support: SupportLevel, limit: SupportLevel) -> SupportLevel:
    return support if _RANK[support] <= _RANK[limit] else limit


def combine(verdict: Verdict, signals: dict[str, Any]) -> Scored:
    """Apply the deterministic signals to the scorer's verdict: they may lower support, add tags and subtract
    points (from the verdict brought into its band); the score always ends inside its support's band. A missing
    citation check changes nothing (unknown, not a pass)."""
    support = verdict.support
    tags = [t for t in dict.fromkeys(verdict.tags) if t in FAILURE_TAGS]
    unknown = [t for t in dict.fromkeys(verdict.tags) if t not in FAILURE_TAGS]
    adjustments: list[str] = []
    penalty = 0

    def tag(name: str) -> None:
        if name not in tags:
            tags.append(name)

    citations = signals.get("citations") or {}
    if citations.get("state") == "verified":
        if citations.get("invalid"):
            support = _cap(support, "partly")
            tag("invalid_citation")
            adjustments.append(f"{citations['invalid']} invalid citation(s): at most partly supported")
        uncited = citations.get("uncited_findings") or 0
        if uncited:
            points = min(UNCITED_FINDING_PENALTY * uncited, MAX_CITATION_PENALTY)
            penalty += points
            tag("uncited_claim")
            adjustments.append(f"{uncited} finding(s) cite no evidence: -{points}")
        elif not citations.get("cited") and citations.get("evidence"):
            penalty += MAX_CITATION_PENALTY
            tag("uncited_claim")
            adjustments.append(f"the analysis cites none of the {citations['evidence']} tool results: "
                               f"-{MAX_CITATION_PENALTY}")
    if signals.get("tool_calls", 0) == 0:
        support = _cap(support, "partly")
        tag("no_tool_evidence")
        adjustments.append("no tool was called: at most partly supported")
    elif signals.get("failed_tool_calls", 0) * 2 >= signals["tool_calls"] and signals.get("failed_tool_calls"):
        penalty += TOOL_FAILURE_PENALTY
        tag("tool_misuse")
        adjustments.append(f"{signals['failed_tool_calls']} of {signals['tool_calls']} tool calls failed: "
                           f"-{TOOL_FAILURE_PENALTY}")
    if signals.get("budget_exhausted"):
        penalty += BUDGET_PENALTY
        tag("budget_exhausted")
        adjustments.append(f"iteration budget exhausted (forced conclusion): -{BUDGET_PENALTY}")
    low, high = BANDS[support]
    # Into the band first, then the penalties: a capped verdict still shows what the signals cost it.
    score = max(min(verdict.score, high) - penalty, low)
    if verdict.score != score and not penalty and support == verdict.support:
        adjustments.append(f"score {verdict.score} outside the {support} band {low}–{high}: {score}")
    return Scored(score=score, support=support, tags=tags, adjustments=adjustments, unknown_tags=unknown)


def support_for(score: int) -> str:
    """The band a score falls in (the quality page compares it with the engineer's rating)."""
    return next(level for level, (low, high) in BANDS.items() if low <= score <= high)
