"""Answers written to fool the scorer, and right answers written to trip it, generated from every scenario.

Each scenario's reference run gives the material: its final answer, the tool calls it made and what they
returned (from `tools.yaml`), its findings and red herrings (`expect.yaml`). Wrong answers must fail, right
answers must pass; `python -m evals.adversaries` prints the tally per generator, and `--baseline REV` also
scores the cases with the scorer of a git revision (before/after figures).

Wrong: the raw tool output pasted in five layouts (`dump_*`, one as a single paragraph with the tool's name and
an evidence id around each line); the true cause buried among other candidates, with
and without hedges (`kitchen_*`); the red herring blamed in a sentence that also holds "although", "despite" or
"rather than" (`blame_*`); every finding stated negatively (`negated`); the reference answer with no tool
call behind it (`no_tools`); for a scenario that expects abstention, a confident cause (`confident`).
Right: the reference answer under other section labels (`relabel_*`), with the red herring dismissed in
several phrasings (`dismiss_*`), with true negatives about the red herring (`negative_*`), with a dotted name or
an IP inside a finding (`dotted`).

Action scenarios add proposals (`action_*`). Wrong: the right tool on another target (`action_wrong_target`), a
justification citing no evidence (`action_uncited`), a tempting action — the red herring's, or one where none
is expected (`action_tempting`), the right action proposed twice (`action_twice`), the reference answer claiming
the fix while the action was rejected and never ran (`action_not_run`) or was never proposed
(`action_never_proposed`). Right: the reference proposals citing their evidence in other words
(`action_cited_otherwise`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from agents.config.builtins import IMPLICIT_ORCHESTRATOR

from .fixture_tools import ACTION_TOOLS
from .fixtures import ActionCall, find_fixture
from .runconfig import ACTION_SETTINGS
from .samples import samples
from .scenario import MEMORY_SERVER, Claim, Regex, Scenario, alerted
from .scoring import Call, Observation, Proposal, normalize
from .scoring.components import POD_SUFFIX, shown

ROOT_LABEL = re.compile(r"\*\*Root cause:\*\*\s*")
SECTION = re.compile(r"^#{2,4} ", re.M)
ACTION = re.compile(r"^Action:\s*(\S+)\s*\nAction Input:\s*", re.M)
ALTERNATIVES = (  # other causes a kitchen-sink answer lists beside the true one
    "a recent deployment introduced a regression in the application",
    "a network policy is blocking traffic between the namespaces",
    "the node is short of allocatable CPU",
    "the service account lost an RBAC permission",
    "an upstream cloud provider incident degraded the load balancer",
)
DOTTED = ("ghcr.io/acme/app:2.8.1", "10.42.3.17", "v1.29.4")
REPLICA_POD = re.compile(r"-[a-z0-9]{8,10}-[a-z0-9]{5}$")  # a Deployment's pod: its workload is the name before
DISMISSALS = (  # (kind, said after the red herring, said before it)
    ("unrelated", "is unrelated", "Unrelated to this alert"),
    ("plays_no_part", "plays no part in this alert", "No part of this incident"),
    ("coincidence", "is a coincidence", "A coincidence"),
    ("only_symptom", "is only a symptom", "Only a symptom"),
    ("not_the_cause", "is not the cause", "Not the cause"),
)


@dataclass(frozen=True)
class Case:
    scenario: str
    generator: str
    right: bool  # a right answer must pass; a wrong one must fail
    observation: Observation


# ---- the reference run ----------------------------------------------------------------------------


def _turn_texts(scenario: Scenario, key: str | None = None) -> list[str]:
    """The texts of the script's turns: all of them, or those of `key`."""
    script = scenario.reference
    lists = script.values() if isinstance(script, dict) else [script]
    if key is not None and isinstance(script, dict):
        lists = [script.get(key) or []]
    return [t if isinstance(t, str) else (t or {}).get("text", "") for turns in lists
            for t in (turns if isinstance(turns, list) else [turns])]


PROPOSAL_KEYS = ("_justification", "_expected_effect", "_verify")


def _reference_run(scenario: Scenario) -> tuple[list[Call], list[Proposal]]:
    """The calls the reference makes, answered from `tools.yaml` as the fixture servers would, with evidence ids in
    the order the session issues them, and its proposals. An action scenario's proposals end as expected; one that
    runs adds the pipeline's calls: the action itself and its verification reads (as many as `verify_attempts`
    when it is not verified)."""
    calls: list[Call] = []
    proposals: list[Proposal] = []
    specs = scenario.expect.actions.proposals if scenario.expect.actions else []
    ran: list[ActionCall] = []

    def answer(name: str, arguments: dict[str, Any], evidence: bool = True) -> None:
        fixture = find_fixture(scenario.tools, name, arguments, ran)
        server, _, tool = name.partition(".")
        eid = f"E{sum(1 for c in calls if c.evidence_id) + 1}" if evidence else ""
        if server == MEMORY_SERVER:  # the built-in memory server answers with the scenario's memories
            calls.append(Call(server, tool, arguments, True, "", "\n".join(m.text for m in scenario.memories), eid))
        elif fixture is not None:
            calls.append(Call(server, tool, arguments, fixture.result is not None, fixture.error or "",
                              fixture.result or "", eid))

    for text in _turn_texts(scenario):
        for match in ACTION.finditer(text):
            arguments, _ = json.JSONDecoder().raw_decode(text[match.end():])
            name = match.group(1)
            if name.partition(".")[2] not in ACTION_TOOLS:
                answer(name, arguments)
                continue
            target = {k: v for k, v in arguments.items() if k not in PROPOSAL_KEYS}
            spec = specs[len(proposals)] if len(proposals) < len(specs) else None
            ended = spec.outcome if spec is not None else "rejected"
            proposals.append(Proposal(*name.split(".", 1), target, arguments.get("_justification", ""), ended))
            calls.append(Call(*name.split(".", 1), target, True, "", "Proposed; it has NOT run."))
            if ended in ("verified", "not_verified"):
                answer(name, target)
                ran.append((name, target))
                verify = arguments["_verify"]
                for _ in range(1 if ended == "verified" else ACTION_SETTINGS["verify_attempts"]):
                    answer(verify["tool"], verify.get("arguments") or {})
    return calls, proposals


def reference_calls(scenario: Scenario) -> list[Call]:
    """The calls the reference makes, answered from `tools.yaml` as the fixture server would."""
    return _reference_run(scenario)[0]


def reference_proposals(scenario: Scenario) -> list[Proposal]:
    """The proposals the reference makes, ended as the scenario expects."""
    return _reference_run(scenario)[1]


def reference_answer(scenario: Scenario) -> str:
    """The session's answer: the last final answer of the script, or of its orchestrator's turns when orchestrated
    (its sub-agents' answers are only what the orchestrator reads)."""
    texts = _turn_texts(scenario, IMPLICIT_ORCHESTRATOR if scenario.alert.orchestrate else None)
    answers = [t.split("Final Answer:", 1)[1].strip() for t in texts if "Final Answer:" in t]
    return answers[-1]


def alert_text(scenario: Scenario) -> str:
    data = scenario.alert.data
    return data if isinstance(data, str) else json.dumps(data)


def observation(scenario: Scenario, answer: str, calls: list[Call] | None = None,
                proposals: list[Proposal] | None = None) -> Observation:
    return Observation(status="completed", error="", final_analysis=answer,
                       calls=reference_calls(scenario) if calls is None else calls, iterations=1, tokens=1,
                       alert=alert_text(scenario),
                       proposals=reference_proposals(scenario) if proposals is None else proposals)


# ---- pieces of answers ----------------------------------------------------------------------------


def _split(answer: str) -> tuple[str, str, str]:
    """(text before the root-cause label, the root-cause part, the rest from the first heading after it)."""
    label = ROOT_LABEL.search(answer)
    start = label.start() if label else 0
    heading = SECTION.search(answer, label.end() if label else 0)
    end = heading.start() if heading else len(answer)
    return answer[:start], answer[start:end].rstrip() + "\n", "\n" + answer[end:]


def _root_sentence(answer: str) -> str:
    """The first sentence of the root-cause statement, without its label."""
    _, root, _ = _split(answer)
    body = ROOT_LABEL.sub("", root).strip()
    return re.split(r"(?<=[.!?])\s+", body, maxsplit=1)[0]


def _workload(scenario: Scenario) -> str:
    return alerted(scenario.alert.data) or "the service"


def _phrasings(claim: Claim) -> Iterator[str]:
    for phrase in claim.any:
        if isinstance(phrase, Regex):
            yield from (s.replace(" is is ", " is ") for s in samples(phrase.regex))
        else:
            yield phrase


def _herring(scenario: Scenario) -> str | None:
    """A phrase that the scenario's first red herring matches, as a clause when one can be written."""
    options = [p for claim in scenario.expect.forbidden for p in _phrasings(claim)]
    clauses = [p for p in options if " is " in p]
    return (clauses or options or [None])[0]


def _subject(herring: str) -> str:
    """The red herring as the subject of a sentence."""
    return f"That {herring}" if " is " in herring else f"The {herring} warning"


def _blame(herring: str, workload: str) -> str:
    return (f"{herring} and that is what breaks {workload}" if " is " in herring
            else f"the {herring} problem is what breaks {workload}")


def _with_conclusion(answer: str, extra: str) -> str:
    before, root, rest = _split(answer)
    return f"{before}{root}\n{extra}\n{rest}"


def _quotes(scenario: Scenario) -> list[str]:
    return [c.result.strip() for c in reference_calls(scenario) if c.result.strip()]


def _forbidden_hit(scenario: Scenario, text: str) -> bool:
    lowered = normalize(text)
    return any(re.search(p.regex, lowered) if isinstance(p, Regex) else normalize(p) in lowered
               for claim in scenario.expect.forbidden for p in claim.any)


# ---- generators -----------------------------------------------------------------------------------


def _wrong(scenario: Scenario) -> Iterator[tuple[str, str, list[Call] | None]]:
    answer = reference_answer(scenario)
    quotes = _quotes(scenario)
    raw = "\n\n".join(quotes)
    workload = _workload(scenario)
    yield "dump_raw", raw, None
    yield "dump_under_label", f"**Root cause:**\n{raw}\n", None
    yield "dump_see_below", f"**Root cause:** the tool output below shows it.\n\n{raw}\n", None
    annotated = "; ".join(f"{c.tool} says {line.strip()} [E{n}]" for n, c in enumerate(reference_calls(scenario), 1)
                          for line in c.result.splitlines() if line.strip())
    yield "dump_annotated", f"**Root cause:** {annotated}\n", None
    fenced = "\n".join(f"```\n{q}\n```" for q in quotes)
    yield "dump_fenced", f"## Summary\n{fenced}\n\n**Root cause:** as the output above shows.\n", None
    if scenario.expect.expect == "abstain":
        yield "confident", _root(answer, f"{ALTERNATIVES[0]}, and that is what breaks {workload}."), None
    else:
        true = _root_sentence(answer)
        alternatives = [a for a in ALTERNATIVES if not _forbidden_hit(scenario, a)][:3]
        yield ("kitchen_hedged", _root(answer, f"it could be one of several things. {true} Or it might be that "
               f"{alternatives[0]}. It is also possible that {alternatives[1]}, or perhaps {alternatives[2]}."), None)
        items = "\n".join(f"- {a}" for a in [true, *alternatives])
        yield "kitchen_list", _root(answer, f"\n{items}"), None
        yield ("kitchen_combination", _root(answer, f"a combination of factors: {true.rstrip('.')}; "
               f"{'; '.join(alternatives)}."), None)
        negated = _negated(scenario, answer)
        if negated:
            yield "negated", _root(answer, f"{workload} fails, but {'; '.join(negated)}."), None
        yield "no_tools", answer, []
    herring = _herring(scenario)
    if herring:
        blame = _blame(herring, workload)
        true = _lower(_root_sentence(answer).rstrip("."))
        yield "blame_although", _root(answer, f"{blame}, although {true}."), None
        yield "blame_despite", _root(answer, f"despite the signs that {true}, {blame}."), None
        yield "blame_rather_than", _root(answer, f"{blame}, rather than the fact that {true}."), None
        if scenario.expect.expect == "cause":
            for name, lead in (("scope_rather_than_wrong", f"rather than {true}, this is {blame}."),
                               ("scope_instead_of_wrong", f"instead of {true}, {blame}."),
                               ("scope_not_but_wrong", f"not that {true} but that {blame}.")):
                yield name, _lead(answer, lead), None
    yield from ((name, text, None) for name, text in _components(scenario))


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:]


def _lead(answer: str, sentence: str) -> str:
    """The answer with the first sentence of its root-cause statement replaced by `sentence`."""
    before, root, rest = _split(answer)
    first = _root_sentence(answer)
    return f"{before}{root.replace(first, sentence, 1)}{rest}"


def _swap(answer: str, names: list[str], other: str) -> str:
    """Every name of the culprit in the answer replaced by `other`."""
    pattern = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)), re.I)
    return pattern.sub(other, answer)


def other_components(scenario: Scenario) -> list[str]:
    """Workloads, nodes and hosts the scenario's tool output shows that are neither its culprit nor its victim, the
    ones named most often first (a workload behind a pod by its own name)."""
    output = "\n".join(_quotes(scenario)).lower()
    known = [n for c in [*scenario.expect.culprit, *([scenario.expect.victim] if scenario.expect.victim else [])]
             for n in c.names]
    names = [n for n in shown(output) if not any(n in k or k in n for k in known)]
    workloads = {REPLICA_POD.sub("", n) for n in names if REPLICA_POD.search(n)}
    return sorted((n for n in names if n in workloads or not POD_SUFFIX.search(n)),
                  key=lambda n: (n not in workloads, "." in n, -output.count(n), n))


def _components(scenario: Scenario) -> Iterator[tuple[str, str]]:
    """The reference answer blaming another component the tools showed, or the victim, instead of the culprit."""
    if scenario.expect.expect != "cause" or not scenario.expect.culprit:
        return
    answer = reference_answer(scenario)
    culprit = [n for c in scenario.expect.culprit for n in c.names]
    others = other_components(scenario)
    if others:
        yield "wrong_component", _swap(answer, culprit, others[0])
        alerted = _workload(scenario)
        if any(alerted.lower() in n or n in alerted.lower() for n in culprit) and others[1:]:
            swapped = _swap(answer, culprit, others[1])
            yield "wrong_component_alert_named", _lead(swapped, f"The {alerted} alert fires because "
                                                                f"{_lower(_root_sentence(swapped))}")
    victim = scenario.expect.victim
    if victim and not any(v in c or c in v for v in victim.names for c in culprit):
        yield "victim_blamed", _swap(answer, culprit, victim.name)


def _root(answer: str, statement: str) -> str:
    """The answer with its summary and root-cause part replaced by `statement`; the evidence and actions stay."""
    _, _, rest = _split(answer)
    return f"**Root cause:** {statement}\n{rest}"


def _negated(scenario: Scenario, answer: str) -> list[str]:
    """Each finding's phrase from the reference conclusion, stated negatively."""
    _, root, _ = _split(answer)
    text = normalize(root)
    out = []
    for claim in scenario.expect.findings:
        for phrase in claim.any:
            match = re.search(phrase.regex if isinstance(phrase, Regex) else re.escape(normalize(phrase)), text)
            if match and " " in match.group(0).strip():
                span = match.group(0).strip()
                verb = re.search(r"\b(is|are|was|were|has|have|had|does|did|can|will)\b", span)
                out.append(f"{span[:verb.end()]} not{span[verb.end():]}" if verb and not re.search(
                    r"\b(not|no|never)\b|n't", span) else f"there is no sign that {span}")
                break
    return out


def _right(scenario: Scenario) -> Iterator[tuple[str, str]]:
    answer = reference_answer(scenario)
    workload = _workload(scenario)
    yield "reference", answer
    yield "relabel_heading", ROOT_LABEL.sub("## Root cause\n\n", answer, count=1)
    yield "relabel_conclusion", ROOT_LABEL.sub("**Conclusion:** ", answer, count=1).replace("### Evidence",
                                                                                           "**Evidence:**")
    herring = _herring(scenario)
    if herring:
        subject = _subject(herring)
        for name, sentence in (
                ("dismiss_nothing_to_do", f"{subject} has nothing to do with this alert."),
                ("dismiss_does_not_affect", f"{subject} does not affect {workload}."),
                ("dismiss_unrelated", f"{subject} is unrelated to the incident."),
                ("dismiss_red_herring", f"{subject} is a red herring."),
                ("dismiss_symptom", f"{subject} is a symptom, not the cause."),
                ("dismiss_anaphora", f"{herring[0].upper()}{herring[1:]}, but that is unrelated to the alert.")):
            yield name, _with_conclusion(answer, sentence)
        described = f"{subject}, seen in the events since before the alert fired,"
        for name, predicate, preposed in DISMISSALS:
            yield f"dismiss_post_{name}", _with_conclusion(answer, f"{described} {predicate}.")
            yield f"dismiss_pre_{name}", _with_conclusion(answer, f"{preposed}: {_lower(subject)}.")
        yield "dismiss_next_sentence", _with_conclusion(answer, f"{described} keeps repeating. It plays no part in "
                                                                f"this alert.")
        yield "dismiss_elsewhere", _with_conclusion(answer, f"{subject} is seen on a node where none of {workload}'s "
                                                            f"pods runs.")
        if scenario.expect.expect == "cause":
            true = _lower(_root_sentence(answer).rstrip("."))
            for name, lead in (("scope_rather_than_right", f"rather than {herring}, {true}."),
                               ("scope_instead_of_right", f"instead of {herring}, {true}."),
                               ("scope_not_but_right", f"not that {herring} but that {true}.")):
                yield name, _lead(answer, lead)
        negative = (f"{herring.replace(' is ', ' is not ', 1)}." if " is " in herring else f"No pod is {herring}.")
        yield "negative_not", _with_conclusion(answer, negative[0].upper() + negative[1:])
        yield "negative_nothing", _with_conclusion(answer, f"Nothing in the events points to {herring}.")
    dotted = _dotted(scenario, answer)
    if dotted:
        yield "dotted", dotted


def _dotted(scenario: Scenario, answer: str) -> str | None:
    """The reference answer with a dotted name put inside the window of a finding's regex, where the same text
    without the dots keeps the very match of the reference: only the dots can break it."""
    before, root, rest = _split(answer)
    for claim in scenario.expect.findings:
        for phrase in (p.regex for p in claim.any if isinstance(p, Regex) and "[^." in p.regex):
            original = re.search(phrase, normalize(root))
            for gap in re.finditer(r"\S+ ", root) if original else ():
                for name in DOTTED:
                    edited = f"{root[:gap.end()]}({name}) {root[gap.end():]}"
                    marker = name.replace(".", "-")
                    undotted = normalize(edited.replace(name, marker))
                    match = re.search(phrase, undotted)
                    if (match and match.start() < undotted.index(marker) < match.end()
                            and match.group(0).replace(f"({marker}) ", "") == original.group(0)):
                        return f"{before}{edited}{rest}"
    return None


# ---- action scenarios ---------------------------------------------------------------------------


def _cites_all(scenario: Scenario) -> str:
    ids = " ".join(f"[{c.evidence_id}]" for c in reference_calls(scenario) if c.evidence_id)
    return f"The reads show it {ids}."


def _tempting(scenario: Scenario) -> list[Proposal]:
    actions = scenario.expect.actions
    return [Proposal(*spec.tool.split(".", 1), dict(spec.args), _cites_all(scenario), "verified")
            for spec in (actions.tempting if actions else [])]


def _wrong_actions(scenario: Scenario) -> Iterator[tuple[str, list[Proposal]]]:
    proposals = reference_proposals(scenario)
    for i, proposal in enumerate(_tempting(scenario)):
        yield f"action_tempting_{i}", [proposal, *proposals[1:]]
    if not proposals:
        return
    first, rest = proposals[0], proposals[1:]
    moved = {**first.arguments, "name": f"{first.arguments.get('name', 'x')}-canary"}
    yield "action_wrong_target", [replace(first, arguments=moved), *rest]
    if scenario.expect.actions.proposals[0].evidence:
        yield "action_uncited", [replace(first, justification=re.sub(r"\[?E\d+\]?", "", first.justification)),
                                 *rest]
    yield "action_twice", [first, replace(first, ended="rejected"), *rest]
    yield "action_not_run", [replace(first, ended="rejected")]
    yield "action_never_proposed", []


def _right_actions(scenario: Scenario) -> Iterator[tuple[str, list[Proposal]]]:
    proposals = reference_proposals(scenario)
    if proposals:
        yield "action_cited_otherwise", [replace(p, justification=re.sub(
            r"\[(E\d+)\]", r"(evidence \1)", p.justification)) for p in proposals]


def cases(scenario: Scenario) -> list[Case]:
    out = [Case(scenario.name, name, False, observation(scenario, text, calls))
           for name, text, calls in _wrong(scenario)]
    out += [Case(scenario.name, name, True, observation(scenario, text)) for name, text in _right(scenario)]
    if scenario.acts:
        answer = reference_answer(scenario)
        out += [Case(scenario.name, name, False, observation(scenario, answer, proposals=proposals))
                for name, proposals in _wrong_actions(scenario)]
        out += [Case(scenario.name, name, True, observation(scenario, answer, proposals=proposals))
                for name, proposals in _right_actions(scenario)]
    return out


# ---- tally ----------------------------------------------------------------------------------------


def misjudged(all_cases: list[Case], passes: Callable[[Case], bool]) -> list[Case]:
    """Wrong answers that pass and right answers that fail."""
    return [c for c in all_cases if passes(c) != c.right]


def tally(all_cases: list[Case], passes: Callable[[Case], bool]) -> dict[str, Any]:
    wrong = Counter(c.generator for c in all_cases if not c.right)
    right = Counter(c.generator for c in all_cases if c.right)
    bad = Counter(c.generator for c in misjudged(all_cases, passes))
    return {
        "cases": len(all_cases),
        "wrong_passed": sum(bad[g] for g in wrong), "wrong": sum(wrong.values()),
        "right_failed": sum(bad[g] for g in right), "right": sum(right.values()),
        "by_generator": {g: f"{bad[g]}/{n} {'passed' if g in wrong else 'failed'}"
                         for g, n in sorted((wrong + right).items())},
    }


def with_observation(case: Case, **changes: Any) -> Case:
    return replace(case, observation=replace(case.observation, **changes))


# ---- `python -m evals.adversaries [--baseline REV]` ---------------------------------------------


def _scorer_at(revision: str) -> Callable[[Any, Observation], Any]:
    """`score` of the scorer as it was at a git revision (the `evals/scoring/` package, or `evals/scoring.py` before
    it), fed observations in its own types."""
    import dataclasses
    import importlib.util
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout

    folder = Path(tempfile.mkdtemp(prefix="scoring-baseline-"))
    files = git("ls-tree", "--name-only", f"{revision}:evals/scoring/").split() if subprocess.run(
        ["git", "cat-file", "-e", f"{revision}:evals/scoring/__init__.py"], cwd=root).returncode == 0 else []
    for name in files:
        (folder / name).write_text(git("show", f"{revision}:evals/scoring/{name}"))
    if not files:
        (folder / "__init__.py").write_text(git("show", f"{revision}:evals/scoring.py"))
    name = "evals.scoring_baseline"
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and relative imports look their module up there
    spec.loader.exec_module(module)

    def convert(cls: type, value: Any, **overrides: Any) -> Any:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in {**vars(value), **overrides}.items() if k in names})

    def score(expect: Any, obs: Observation) -> Any:
        calls = [convert(module.Call, c) for c in obs.calls]
        return module.score(expect, convert(module.Observation, obs, calls=calls))

    return score


def main(argv: list[str] | None = None) -> int:
    import argparse

    from .scenario import load_all, select
    from .scoring import score

    parser = argparse.ArgumentParser(description="Tally the adversarial answers against the scorer.")
    parser.add_argument("--scenario", action="append", metavar="GLOB", help="as for manage.py eval")
    parser.add_argument("--baseline", metavar="REV", help="also score with the scorer at this git revision")
    args = parser.parse_args(argv)
    scenarios = {s.name: s for s in load_all(select(args.scenario))}
    all_cases = [c for s in scenarios.values() for c in cases(s)]
    scorers = {"baseline": _scorer_at(args.baseline)} if args.baseline else {}
    scorers["current"] = score
    for label, scorer in scorers.items():
        figures = tally(all_cases, lambda c, s=scorer: s(scenarios[c.scenario].expect, c.observation).outcome == "pass")
        print(json.dumps({"scorer": label, **figures}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
