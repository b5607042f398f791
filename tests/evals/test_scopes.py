"""What a dismissal reaches and what it does not, clause by clause; and whose failure a conclusion names.

Written as a skeptical reviewer would try the scorer: natural dismissals of a red herring (after it, before it,
past a description of it, in the next sentence) must excuse it; "rather than X, Y", "not X but Y" and "instead of
X, Y" dismiss X and claim Y, whichever of the two is the red herring; and the right mechanism said of the wrong
component fails with `wrong_component`.
"""

from __future__ import annotations

import pytest

from evals.adversaries import observation, reference_answer
from evals.scenario import SCENARIOS_DIR, load_scenario
from evals.scoring import score
from evals.scoring.claims import compile_phrase, hits, sentences

HERRING = "disk pressure on worker-2"
CAUSE = "orders-db is oomkilled"


def _said(text: str, phrase: str) -> list[tuple[bool, bool]]:
    """(dismissed, asserted) of every place `phrase` stands in `text`."""
    return [(h.dismissed, h.asserted) for h in hits(compile_phrase(phrase, False), sentences(text))]


DISMISSED = {
    "postposed": "Disk pressure on worker-2 is unrelated.",
    "postposed past a description": "Disk pressure on worker-2, reported by the kubelet since 02:00, is unrelated "
                                    "to this alert.",
    "plays no part": "Disk pressure on worker-2, seen since the node joined, plays no part in this alert.",
    "a coincidence": "Disk pressure on worker-2 is a coincidence.",
    "only a symptom": "Disk pressure on worker-2, which the evictions show, is only a symptom.",
    "not the cause": "Disk pressure on worker-2 is not the cause.",
    "preposed unrelated": "Unrelated to this alert: disk pressure on worker-2 evicted two batch pods.",
    "preposed not the cause": "Not the cause: disk pressure on worker-2.",
    "preposed coincidence": "A coincidence, disk pressure on worker-2 started the same minute.",
    "preposed only a symptom": "Only a symptom: disk pressure on worker-2 follows the log burst.",
    "next sentence plays no part": "Disk pressure on worker-2 repeats every minute. It plays no part in this alert.",
    "on a node where none of its pods runs": "Disk pressure on worker-2 is real, on a node where none of web's "
                                             "pods runs.",
    "rather than X, Y": "Rather than disk pressure on worker-2, orders-db is OOMKilled.",
    "not X but Y": "Not disk pressure on worker-2 but orders-db is OOMKilled.",
    "instead of X, Y": "Instead of disk pressure on worker-2, the cause is that orders-db is OOMKilled.",
    "Y rather than X": "orders-db is OOMKilled rather than disk pressure on worker-2 evicting it.",
}


@pytest.mark.parametrize("text", DISMISSED.values(), ids=DISMISSED)
def test_a_dismissal_excuses_what_it_dismisses(text):
    assert _said(text, HERRING) == [(True, False)]


CLAIMED_CAUSE = {k: DISMISSED[k] for k in ("rather than X, Y", "not X but Y", "instead of X, Y")}


@pytest.mark.parametrize("text", CLAIMED_CAUSE.values(), ids=CLAIMED_CAUSE)
def test_what_follows_a_dismissal_of_another_is_claimed(text):
    assert _said(text, CAUSE) == [(False, True)]


CLAIMED_HERRING = {
    "rather than the cause, this is the herring": "Rather than orders-db being OOMKilled, this is disk pressure on "
                                                  "worker-2 evicting the web pods.",
    "not the cause but the herring": "Not orders-db but disk pressure on worker-2 evicts the web pods.",
    "instead of the cause, the herring": "Instead of orders-db, disk pressure on worker-2 evicts the web pods.",
    "a dismissal of another thing after it": "Disk pressure on worker-2 evicts the web pods, and the backup job is "
                                             "unrelated.",
    "a dismissal of another thing next": "Disk pressure on worker-2 evicts the web pods. The backup job plays no part.",
    "a preposed dismissal ends at but": "Unrelated to this alert, the backup job failed; but disk pressure on worker-2 "
                                        "evicts the web pods.",
}


@pytest.mark.parametrize("text", CLAIMED_HERRING.values(), ids=CLAIMED_HERRING)
def test_a_dismissal_does_not_reach_the_claim_beside_it(text):
    assert _said(text, HERRING) == [(False, True)]


# ---- the findings, on a scenario: the wrong component, natural dismissals, a swallowed claim ----------

JVM = "herring-jvm-heap-oom"  # ledger-service OOMKilled by its -Xmx; coredns and DNS warnings are in the output


def _score(name: str, answer: str):
    scenario = load_scenario(SCENARIOS_DIR / name)
    return score(scenario.expect, observation(scenario, answer))


def _reference_with(name: str, old: str, new: str) -> str:
    answer = reference_answer(load_scenario(SCENARIOS_DIR / name))
    assert old in answer
    return answer.replace(old, new)


def test_the_right_mechanism_in_another_workload_fails_as_wrong_component():
    answer = ("**Root cause:** coredns is **OOMKilled** by the kernel (exit 137) because the JVM is configured with "
              "**-Xmx1536m, equal to the container memory limit of 1536Mi**.\n")
    result = _score(JVM, answer)
    assert [c.reason for c in result.failed] == ["wrong_component"], result.failed
    assert _score(JVM, answer.replace("coredns", "ledger-service")).outcome == "pass"


def test_the_alerted_workload_named_beside_another_blamed_fails_as_wrong_component():
    # catalog-api is in the scenario's tool output; search-indexer is the one OOMKilled
    answer = ("**Root cause:** the search-indexer alert fires because catalog-api is OOMKilled (exit code 137) at "
              "its 512Mi memory limit. Its INDEX_BATCH_SIZE went from 50000 to 200000.\n")
    assert [c.reason for c in _score("oomkilled-memory-limit", answer).failed] == ["wrong_component"]
    right = answer.replace("because catalog-api is", "because it is").replace("alert fires", "pods crash loop")
    assert _score("oomkilled-memory-limit", right).outcome == "pass"


def test_the_victim_blamed_instead_of_the_dependency_fails_as_wrong_component():
    answer = reference_answer(load_scenario(SCENARIOS_DIR / "crashloop-missing-dependency"))
    blamed = answer.replace("checkout-cache", "checkout-api")
    assert "wrong_component" in {c.reason for c in _score("crashloop-missing-dependency", blamed).failed}


DNS = "The `DNSConfigForming` warnings (`Nameserver limits were exceeded`) are unrelated and harmless: they only say " \
      "the node's resolv.conf lists more than three nameservers."


@pytest.mark.parametrize("dismissal", [
    "The `DNSConfigForming` warnings, which say that the nameserver limits were exceeded on every restart of the pod, "
    "repeated 40 times, are unrelated.",
    "The kubelet reports `DNSConfigForming` (nameserver limits were exceeded) for the pod. It plays no part in this "
    "alert.",
    "Unrelated to this alert: the `DNSConfigForming` warnings about nameserver limits.",
], ids=["described then unrelated", "it plays no part", "preposed"])
def test_natural_dismissals_of_the_red_herring_pass(dismissal):
    assert _score(JVM, _reference_with(JVM, DNS, dismissal)).outcome == "pass"


def test_rather_than_the_cause_this_is_the_red_herring_fails():
    answer = ("**Root cause:** rather than the JVM heap, this is a DNS failure: the nameserver limits were exceeded "
              "and ledger-service is OOMKilled (exit 137) with -Xmx1536m as collateral.\n")
    assert "blamed_red_herring" in {c.reason for c in _score(JVM, answer).failed}


def test_every_cause_names_its_culprit_and_ten_victims_fail_because_of_another_workload():
    from evals.scenario import load_all, select

    scenarios = load_all(select(None))
    assert len(scenarios) >= 94
    assert all(s.expect.culprit for s in scenarios if s.expect.expect == "cause")
    victims = load_all(select(["victim-*"]))
    assert len(victims) >= 10
    for s in victims:
        culprit = {n for c in s.expect.culprit for n in c.names}
        assert s.expect.victim and not culprit & set(s.expect.victim.names), s.name
        assert s.expect.forbidden, s.name  # the red herring that looks like the victim's own fault
        assert _score(s.name, reference_answer(s)).outcome == "pass", s.name
