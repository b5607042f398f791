"""The citation check as a scoring signal: counted when stored, `unknown` (neither pass nor fault) when not."""

from __future__ import annotations

from types import SimpleNamespace

from tarsy.pipeline.scoring import citation_signal
from tarsy.pipeline.scoring.rubric import Verdict, combine

STORED = {"valid": [{"id": "E1"}], "invalid": [{"id": "E9", "reason": "not in this session"}],
          "uncited": [{"id": "E2"}, {"id": "E3"}], "cited_count": 2, "evidence_count": 3,
          "uncited_findings": [{"text": "The node pool was resized an hour before the alert fired."}]}


def test_a_stored_check_becomes_counts():
    assert citation_signal(SimpleNamespace(citations=STORED)) == {
        "state": "verified", "valid": 1, "invalid": 1, "cited": 2, "uncited_evidence": 2, "evidence": 3,
        "uncited_findings": 1}


def test_no_stored_check_is_unknown():
    assert citation_signal(SimpleNamespace(citations=None)) == {"state": "unknown"}
    assert citation_signal(SimpleNamespace()) == {"state": "unknown"}


def test_an_invalid_citation_in_the_stored_check_caps_the_score():
    signals = {"citations": citation_signal(SimpleNamespace(citations=STORED)), "tool_calls": 3,
               "failed_tool_calls": 0, "budget_exhausted": False}
    scored = combine(Verdict(support="supported", score=90, rationale="r"), signals)
    assert (scored.support, scored.score, scored.tags) == ("partly", 54, ["invalid_citation", "uncited_claim"])
