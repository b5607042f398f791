"""Deterministic scoring of one run against its `expect.yaml`.

The answer is split into its conclusion (summary and root-cause statement, in its own words) and what it quotes
(`answer.py`); findings and red herrings are read in the conclusion, clause by clause (`claims.py`). A run fails
for named reasons: `missing_finding`, `blamed_red_herring`, `uncommitted` (several candidate causes, no one
committed to), `confabulated` (a cause where the scenario expects the answer to say the evidence shows none),
`evidence_only` (no root-cause statement of its own, or a finding only in quoted output or evidence),
`missing_tool`, `budget`, `wrong_component` (the cause attributed to the alerted victim or to another component the
tools showed, not to the scenario's culprit: `components.py`); in an action scenario (`actions:` in expect.yaml)
also `missing_action` (an expected proposal was not made), `wrong_action` (another tool, or the right tool on
another target), `uncited_action` (its justification cites no evidence id of a read that shows it),
`unexpected_action` (a proposal beyond those expected, a repeat, or any proposal where none is expected) and
`action_outcome` (it did not end as expected: verified, not verified, rejected — a conclusion of "fixed" with the
action never run fails here). A run with a fixture gap is reported as a gap, apart from failures: the scenario, not
the investigation, is missing something.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from ..fixtures import GAP_MARKER, arguments_match
from ..scenario import ActionSpec, Claim, Expect, Regex
from . import components
from .answer import PASTED_MAX, Answer, normalize, parse
from .claims import abstains, compile_phrase, hits, sentences, uncommitted

__all__ = ["Call", "Check", "Observation", "Proposal", "Score", "expected_next", "normalize", "score"]

Outcome = Literal["pass", "fail", "gap"]
Reason = Literal["missing_finding", "blamed_red_herring", "uncommitted", "confabulated", "evidence_only",
                 "missing_tool", "budget", "wrong_component", "missing_action", "wrong_action", "uncited_action",
                 "unexpected_action", "action_outcome"]
EVIDENCE_ID = re.compile(r"\bE[1-9][0-9]*\b")


@dataclass(frozen=True)
class Call:
    server: str  # logical name, as the scenario knows it
    tool: str
    arguments: dict[str, Any]
    success: bool
    error: str = ""
    result: str = ""  # what the tool returned: text quoted from it is evidence, not a conclusion
    evidence_id: str = ""  # E<n>: how an analysis or a justification cites it

    @property
    def is_gap(self) -> bool:
        return not self.success and GAP_MARKER in self.error


@dataclass(frozen=True)
class Proposal:
    """An action the agent proposed, and how it ended: `verified`, `not_verified`, `failed` once it ran, else the
    proposal's status (`rejected`, `expired`, `pending`, …)."""

    server: str  # logical name
    tool: str
    arguments: dict[str, Any]
    justification: str
    ended: str


@dataclass
class Observation:
    """What a finished session did, read from its rows."""

    status: str
    error: str
    final_analysis: str
    calls: list[Call]
    iterations: int
    tokens: int
    alert: Any = ""  # the alert as received: echoing it back concludes nothing
    proposals: list[Proposal] = field(default_factory=list)  # in the order they were proposed


@dataclass(frozen=True)
class Check:
    kind: str  # session / conclusion / finding / forbidden / tool / budget
    name: str
    passed: bool
    detail: str = ""
    reason: Reason | Literal[""] = ""  # why it failed; '' when it passed


@dataclass
class Score:
    outcome: Outcome
    checks: list[Check] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]


def _pattern(phrase: str | Regex):
    return compile_phrase(phrase.regex, True) if isinstance(phrase, Regex) else compile_phrase(phrase, False)


def _finding(claim: Claim, parts: list[str], quoted: list[str]) -> Check:
    found = [h for p in claim.any for h in hits(_pattern(p), parts)]
    if any(h.asserted for h in found):
        return Check("finding", claim.name, True)
    if found:
        how = "stated negatively" if found[0].negated else "dismissed"
        return Check("finding", claim.name, False, f"{how} in: {found[0].sentence[:200]}", "missing_finding")
    if any(_pattern(p)[0].search(s) for p in claim.any for s in quoted):
        return Check("finding", claim.name, False, "only in quoted output or evidence, not in the conclusion",
                     "evidence_only")
    return Check("finding", claim.name, False, "not in the conclusion", "missing_finding")


def _component(expect: Expect, parts: list[str], calls: list[Call]) -> list[Check]:
    if expect.expect == "abstain":
        return []
    found = [(claim.name, [h for p in claim.any for h in hits(_pattern(p), parts)]) for claim in expect.findings]
    passed, why = components.check(expect, parts, found, "\n".join(c.result for c in calls))
    return [Check("component", "attributes the cause to the culprit", passed, why,
                  "" if passed else "wrong_component")]


def _forbidden(claim: Claim, parts: list[str]) -> Check:
    for phrase in claim.any:
        blamed = next((h for h in hits(_pattern(phrase), parts) if h.blamed), None)
        if blamed:
            return Check("forbidden", claim.name, False, f"claimed in: {blamed.sentence[:200]}",
                         "blamed_red_herring")
    return Check("forbidden", claim.name, True)


def _tool(requirement: Any, calls: list[Call]) -> Check:
    for spec in requirement.any:
        server, _, tool = spec.tool.partition(".")
        if any(c.success and c.server == server and c.tool == tool and arguments_match(tool, spec.args, c.arguments)
               for c in calls):
            return Check("tool", requirement.label, True)
    return Check("tool", requirement.label, False, "no successful call matched", "missing_tool")


def _budgets(expect: Expect, obs: Observation) -> list[Check]:
    limits = expect.budgets
    figures = (("max_iterations", limits.max_iterations, obs.iterations),
               ("max_tokens", limits.max_tokens, obs.tokens),
               ("max_tool_calls", limits.max_tool_calls, len(obs.calls)))
    return [Check("budget", name, used <= limit, f"{used} > {limit}" if used > limit else f"{used} ≤ {limit}",
                  "budget" if used > limit else "")
            for name, limit, used in figures if limit is not None]


def _session(obs: Observation) -> Check:
    if obs.status == "completed":
        return Check("session", "completed", True)
    timed_out = "did not finish" in obs.error or "timed out" in obs.error.lower() or "timeout" in obs.status
    return Check("session", "completed", False, f"{obs.status}: {obs.error}"[:300],
                 "budget" if timed_out else "missing_finding")


def _conclusion(expect: Expect, answer: Answer) -> list[Check]:
    """The answer states a root cause, commits to it, or — when the scenario expects it — abstains."""
    if not answer.has_root:
        return [Check("conclusion", "root-cause statement", False, "the answer states no root cause of its own",
                      "evidence_only")]
    if answer.copied >= PASTED_MAX:
        return [Check("conclusion", "root-cause statement", False,
                      f"{answer.copied:.0%} of the conclusion is pasted tool output", "evidence_only")]
    if expect.expect == "abstain":
        plain = abstains(answer.root)
        return [Check("conclusion", "says the evidence shows no cause", plain,
                      "" if plain else "states a cause the evidence does not show", "" if plain else "confabulated")]
    why = uncommitted(answer.conclusion, answer.root)
    return [Check("conclusion", "commits to one cause", not why, why, "uncommitted" if why else "")]


def _is(spec: ActionSpec, proposal: Proposal) -> bool:
    """The proposal is the action `spec` names: its tool on its target."""
    server, _, tool = spec.tool.partition(".")
    return (proposal.server, proposal.tool) == (server, tool) and arguments_match(tool, spec.args,
                                                                                  proposal.arguments)


def expected_next(expect: Expect, before: int, proposal: Proposal) -> ActionSpec | None:
    """The spec `proposal` fulfils when `before` proposals came before it, or None (not expected: rejected)."""
    specs = expect.actions.proposals if expect.actions else []
    return specs[before] if before < len(specs) and _is(specs[before], proposal) else None


def _cites(requirement: Any, justification: str, calls: list[Call]) -> bool:
    cited = set(EVIDENCE_ID.findall(justification))
    return any(c.success and c.evidence_id in cited and c.server == spec.tool.partition(".")[0]
               and c.tool == spec.tool.partition(".")[2] and arguments_match(c.tool, spec.args, c.arguments)
               for spec in requirement.any for c in calls)


def _action(spec: ActionSpec, proposal: Proposal | None, calls: list[Call]) -> list[Check]:
    name = f"{spec.tool} {spec.args}"
    if proposal is None:
        return [Check("action", name, False, "not proposed", "missing_action")]
    if not _is(spec, proposal):
        return [Check("action", name, False, f"proposed {proposal.server}.{proposal.tool} {proposal.arguments}",
                      "wrong_action")]
    checks = [Check("action", name, True)]
    for requirement in spec.evidence:
        cited = _cites(requirement, proposal.justification, calls)
        checks.append(Check("action", f"justification cites {requirement.label}", cited,
                            "" if cited else f"justification: {proposal.justification[:200]}",
                            "" if cited else "uncited_action"))
    ended = proposal.ended == spec.outcome
    checks.append(Check("action", f"{spec.tool} ends {spec.outcome}", ended, "" if ended else proposal.ended,
                        "" if ended else "action_outcome"))
    return checks


def _actions(expect: Expect, obs: Observation) -> list[Check]:
    """Each expected proposal made, cited and ended as expected, in order; nothing else proposed."""
    if expect.actions is None:
        return []
    specs = expect.actions.proposals
    checks = [c for i, spec in enumerate(specs)
              for c in _action(spec, obs.proposals[i] if i < len(obs.proposals) else None, obs.calls)]
    checks += [Check("action", "no other action", False, f"also proposed {p.server}.{p.tool} {p.arguments}",
                     "unexpected_action") for p in obs.proposals[len(specs):]]
    return checks


def score(expect: Expect, obs: Observation) -> Score:
    answer = parse(obs.final_analysis, tool_results=[c.result for c in obs.calls], alert=obs.alert)
    parts = sentences(answer.conclusion)
    checks = [_session(obs)]
    if obs.status == "completed":
        checks += _conclusion(expect, answer)
    checks += [_finding(c, parts, sentences(answer.quoted)) for c in expect.findings]
    if obs.status == "completed":
        checks += _component(expect, parts, obs.calls)
    checks += [_forbidden(c, parts) for c in expect.forbidden]
    checks += [_tool(r, obs.calls) for r in expect.tools]
    if not any(c.success for c in obs.calls):
        checks.append(Check("tool", "any successful call", False, "the answer rests on no tool output",
                            "missing_tool"))
    checks += _actions(expect, obs)
    checks += _budgets(expect, obs)
    gaps = [f"{c.server}.{c.tool} {c.error.split(' matches the arguments ', 1)[-1]}" for c in obs.calls if c.is_gap]
    outcome: Outcome = "gap" if gaps else "fail" if any(not c.passed for c in checks) else "pass"
    return Score(outcome, checks, gaps)
