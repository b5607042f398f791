"""Whose failure it is: an answer must attribute the root cause to the scenario's culprit.

Findings are phrases of a mechanism (`oomkilled`, `exit code 137`) that say nothing about whose it is. The
scenario names its culprit (`expect.yaml: culprit`, with aliases) and, when the alert is about another component,
its victim. A conclusion fails with `wrong_component` when it names no culprit where it is not dismissing it, or
when it states a finding in a clause that names another component — one of the workloads, nodes or hosts that the
investigation's tool output showed, or the victim — and no culprit: "coredns is OOMKilled because …" for a
ledger-service alert.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from ..scenario import Component, Expect
from .claims import Hit, clause_span, compile_phrase, hits

_NAMED = (
    r"\bname:\s*\"?(?P<yaml>[a-z0-9][a-z0-9.-]*[a-z0-9])\"?(?=\s|$|,|\})",  # YAML and JSON objects
    r"\b(?:pods?|deployments?|statefulsets?|daemonsets?|replicasets?|nodes?|services?|jobs?|cronjobs?)"
    r"(?:/|\s+)\"?(?P<kind>[a-z0-9][a-z0-9.-]*[a-z0-9])",  # pod/x, node x
    r"(?<![\w.@/-])(?P<host>[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|io|net|org|eu|example|internal|local))(?![\w./-])",
)
NAMED = re.compile("|".join(_NAMED), re.M)
NOT_COMPONENTS = re.compile(r"(?:^|\.)(?:kubernetes\.io|k8s\.io|x-k8s\.io|svc\.cluster\.local|example\.com)$")
# a pod's name ends in its ReplicaSet's hash and its own suffix, a StatefulSet's in an ordinal, a Job's in a number
POD_SUFFIX = re.compile(r"(?:-[a-z0-9]{8,10})?-[a-z0-9]{5}$|-\d+$")
TICKET = re.compile(r"^[a-z]{2,10}-\d{3,}$")  # a change ticket (SEC-1190), not a component; ordinals are short
MIN_NAME = 3  # shorter tokens are words, not names


def _rows(text: str) -> Iterable[str]:
    """The NAME column of tabular tool output (kubectl-style listings)."""
    column = None
    for line in text.splitlines():
        cells = line.split()
        if "NAME" in cells and all(c.isupper() or not c.isalpha() for c in cells):
            column = cells.index("NAME")
        elif column is not None and len(cells) > column:
            yield cells[column].lower()
        else:
            column = None


def _is_name(token: str) -> bool:
    return (len(token) >= MIN_NAME and re.search(r"[a-z]{2}", token) is not None and not TICKET.match(token)
            and ("-" in token or "." in token) and not token.startswith("-"))


@cache
def shown(tool_output: str) -> frozenset[str]:
    """The names of components the tools showed: listed objects, `name:` fields, `kind/name` and host names, and
    for a pod also its workload's name (`coredns` for `coredns-5d78c9869d-x2k9p`)."""
    text = tool_output.lower()
    tokens = {m.group(m.lastgroup) for m in NAMED.finditer(text) if m.lastgroup} | set(_rows(tool_output))
    names = {t.strip(".,;:\"'()[]") for t in tokens}
    names = {n for n in names if _is_name(n) and not NOT_COMPONENTS.search(n)}
    return frozenset(names | {POD_SUFFIX.sub("", n) for n in names if POD_SUFFIX.search(n)} - {""})


def _overlaps(name: str, component: Component) -> bool:
    return any(name in alias or alias in name for alias in component.names)


def _mentions(names: Iterable[str], text: str) -> list[str]:
    """Which of `names` stand in `text` as names of their own (not inside a longer one)."""
    return [n for n in names if re.search(rf"(?<![\w./-]){re.escape(n)}(?![\w/:-]|\.\w)", text)]  # not in an image


def check(expect: Expect, parts: list[str], findings: list[tuple[str, list[Hit]]], tool_output: str
          ) -> tuple[bool, str]:
    """(passed, why not): the conclusion names a culprit, and states no finding only of another component."""
    if expect.expect == "abstain" or not expect.culprit:
        return True, ""
    names = [alias for c in expect.culprit for alias in c.names]
    culprits = [h for alias in names for h in hits(compile_phrase(alias, False), parts) if not h.dismissed]
    if not culprits:
        return False, f"names none of the culprits ({', '.join(c.name for c in expect.culprit)})"
    known = [*expect.culprit, *([expect.victim] if expect.victim else [])]
    others = [n for n in shown(tool_output) if not any(_overlaps(n, c) for c in known)]
    mentions = sorted([(_where(parts, h), "", h) for h in culprits]
                      + [(_where(parts, h), other, h) for other in _mentions(others, " ".join(parts))
                         for h in hits(compile_phrase(other, False), parts)
                         if not h.dismissed and _mentions([other], h.sentence[max(h.start - 1, 0):h.end + 1])],
                      key=lambda m: m[0])
    for finding, found in findings:
        blamed = [_owner(parts, hit, mentions) for hit in found if hit.asserted]
        if blamed and all(blamed):
            return False, f"attributes {finding!r} to {blamed[0]}"
    return True, ""


def _where(parts: list[str], hit: Hit) -> tuple[int, int]:
    return next(i for i, part in enumerate(parts) if part is hit.sentence or part == hit.sentence), hit.start


def _owner(parts: list[str], hit: Hit, mentions: list[tuple[tuple[int, int], str, Hit]]) -> str:
    """The other component `hit` is said of, or '': the components its clause names (a culprit among them is
    enough), else the last one named before it."""
    index, _ = _where(parts, hit)
    start, end = clause_span(hit.sentence, hit.start, hit.end)
    inside = [name for (i, at), name, _ in mentions if i == index and start <= at < end]
    if inside:
        return "" if "" in inside else f"{inside[0]} in: {hit.sentence[start:end][:200]}"
    before = [(i, clause_span(h.sentence, h.start, h.end), name) for (i, at), name, h in mentions
              if (i, at) < (index, start)]
    last = [name for i, span, name in before if before and (i, span) == before[-1][:2]]
    if not last or "" in last:
        return ""
    return f"{last[0]} (named before: {hit.sentence[start:end][:160]})"
