"""Deterministic scoring of one run against its `expect.yaml`.

Text is compared after normalisation (case, Markdown emphasis and runs of whitespace ignored): a plain phrase
must occur as is, a regex is searched for. A forbidden claim counts when one sentence of the analysis makes
it without dismissing it (`unrelated`, `not the cause`, `red herring`, …): an analysis may name a red herring
to rule it out. A run with a fixture gap is reported as a gap, apart from failures: the scenario, not the
investigation, is missing something.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from .fixtures import GAP_MARKER, arguments_match
from .scenario import Claim, Expect, Regex

Outcome = Literal["pass", "fail", "gap"]

DISMISSAL = re.compile(
    r"\b(?:unrelated|not related|not (?:the|a) (?:root )?cause|not (?:the )?(?:reason|culprit)|not responsible|"
    r"not why|isn't why|red herring|ruled? out|irrelevant|coincident(?:al)?|coincidence|benign|harmless|"
    r"(?:does not|doesn't|cannot|can't|would not|wouldn't) explain|separate (?:issue|problem)|independent of|"
    r"no (?:impact|effect|bearing)|not caused by|although|despite|distraction|pre-existing|rather than|instead of|"
    r"not with|not (?:an? )?(?:[\w-]+ ){0,3}(?:problem|issue|error|failure)|(?:is|are) (?:fine|ok|healthy|working))\b",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True)
class Call:
    server: str  # logical name, as the scenario knows it
    tool: str
    arguments: dict[str, Any]
    success: bool
    error: str = ""
    result: str = ""  # what the tool returned: text quoted from it is evidence, not a conclusion

    @property
    def is_gap(self) -> bool:
        return not self.success and GAP_MARKER in self.error


@dataclass
class Observation:
    """What a finished session did, read from its rows."""

    status: str
    error: str
    final_analysis: str
    calls: list[Call]
    iterations: int
    tokens: int
    alert: str = ""  # the alert as received: echoing it back concludes nothing


@dataclass(frozen=True)
class Check:
    kind: str  # session / finding / forbidden / tool / budget
    name: str
    passed: bool
    detail: str = ""


@dataclass
class Score:
    outcome: Outcome
    checks: list[Check] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]


def normalize(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[*`]", "", text)).strip().lower()


def found(phrase: str | Regex, text: str) -> bool:
    """`text` is already normalised."""
    if isinstance(phrase, Regex):
        return re.search(phrase.regex, text, re.I | re.S) is not None
    return normalize(phrase) in text


def _finding(claim: Claim, analysis: str) -> Check:
    return Check("finding", claim.name, any(found(p, analysis) for p in claim.any))


def _forbidden(claim: Claim, sentences: list[str]) -> Check:
    for sentence in sentences:
        if any(found(p, sentence) for p in claim.any) and not DISMISSAL.search(sentence):
            return Check("forbidden", claim.name, False, f"claimed in: {sentence[:200]}")
    return Check("forbidden", claim.name, True)


def _tool(requirement: Any, calls: list[Call]) -> Check:
    for spec in requirement.any:
        server, _, tool = spec.tool.partition(".")
        if any(c.success and c.server == server and c.tool == tool and arguments_match(tool, spec.args, c.arguments)
               for c in calls):
            return Check("tool", requirement.label, True)
    return Check("tool", requirement.label, False, "no successful call matched")


def _budgets(expect: Expect, obs: Observation) -> list[Check]:
    limits = expect.budgets
    figures = (("max_iterations", limits.max_iterations, obs.iterations),
               ("max_tokens", limits.max_tokens, obs.tokens),
               ("max_tool_calls", limits.max_tool_calls, len(obs.calls)))
    return [Check("budget", name, used <= limit, f"{used} > {limit}" if used > limit else f"{used} ≤ {limit}")
            for name, limit, used in figures if limit is not None]


def sentences(text: str) -> list[str]:
    return [normalize(s) for s in _SENTENCE_END.split(text) if s.strip()]


def score(expect: Expect, obs: Observation) -> Score:
    analysis = normalize(obs.final_analysis)
    checks = [Check("session", "completed", obs.status == "completed",
                    "" if obs.status == "completed" else f"{obs.status}: {obs.error}"[:300])]
    checks += [_finding(c, analysis) for c in expect.findings]
    parts = sentences(obs.final_analysis)
    checks += [_forbidden(c, parts) for c in expect.forbidden]
    checks += [_tool(r, obs.calls) for r in expect.tools]
    checks += _budgets(expect, obs)
    gaps = [f"{c.server}.{c.tool} {c.error.split(' matches the arguments ', 1)[-1]}" for c in obs.calls if c.is_gap]
    outcome: Outcome = "gap" if gaps else "fail" if any(not c.passed for c in checks) else "pass"
    return Score(outcome, checks, gaps)
