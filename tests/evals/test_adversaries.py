"""The adversarial suite: over every scenario, generated wrong answers fail and generated right answers pass."""

from __future__ import annotations

import pytest

from evals.adversaries import DISMISSALS, cases, misjudged, other_components
from evals.scenario import load_all, select
from evals.scoring import score

SCENARIOS = {s.name: s for s in load_all(select(None))}
CASES = [c for s in SCENARIOS.values() for c in cases(s)]


def _passes(case) -> bool:
    return score(SCENARIOS[case.scenario].expect, case.observation).outcome == "pass"


def test_there_are_enough_cases_of_every_kind_over_every_scenario():
    assert len(CASES) >= 4000
    assert {c.scenario for c in CASES} == set(SCENARIOS)
    generators = {c.generator for c in CASES}
    assert {"dump_raw", "dump_under_label", "kitchen_hedged", "kitchen_list", "blame_although", "blame_despite",
            "blame_rather_than", "negated", "no_tools", "dismiss_nothing_to_do", "dismiss_does_not_affect",
            "dismiss_symptom", "negative_not", "dotted"} <= generators


def test_the_component_and_dismissal_kinds_are_generated_for_every_scenario_where_they_apply():
    made = {(c.scenario, c.generator) for c in CASES}
    causes = {n for n, s in SCENARIOS.items() if s.expect.expect == "cause"}
    herrings = {n for n, s in SCENARIOS.items() if s.expect.forbidden}
    victims = {n for n in causes if SCENARIOS[n].expect.victim and not any(
        v in c or c in v for v in SCENARIOS[n].expect.victim.names for comp in SCENARIOS[n].expect.culprit
        for c in comp.names)}
    shown = {n for n in causes if other_components(SCENARIOS[n])}
    assert len(victims) >= 50 and len(shown) >= 40
    expected = ({(n, "victim_blamed") for n in victims} | {(n, "wrong_component") for n in shown}
                | {(n, f"dismiss_{where}_{kind}") for n in herrings for kind, _, _ in DISMISSALS
                   for where in ("post", "pre")}
                | {(n, f"scope_{kind}_{side}") for n in herrings & causes for kind in ("rather_than", "not_but",
                                                                                       "instead_of")
                   for side in ("right", "wrong")})
    assert expected <= made, sorted(expected - made)[:10]


@pytest.mark.parametrize("right", [False, True], ids=["wrong answers fail", "right answers pass"])
def test_no_answer_is_misjudged(right):
    bad = misjudged([c for c in CASES if c.right == right], _passes)
    assert not bad, [(c.scenario, c.generator) for c in bad[:20]]


def test_action_scenarios_get_the_action_adversaries():
    acting = {name for name, s in SCENARIOS.items() if s.acts}
    assert len(acting) >= 4
    made = {(c.scenario, c.generator) for c in CASES}
    proposing = {name for name in acting if SCENARIOS[name].expect.actions.expect == "propose"}
    for name in proposing:
        for generator in ("action_wrong_target", "action_uncited", "action_tempting_0", "action_twice",
                          "action_not_run", "action_never_proposed", "action_cited_otherwise"):
            assert (name, generator) in made, (name, generator)
    for name in acting - proposing:
        assert (name, "action_tempting_0") in made and (name, "reference") in made
