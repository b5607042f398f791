"""The scoring rubric: reading the scorer's reply and combining it with the deterministic signals."""

from __future__ import annotations

import pytest

from tarsy.pipeline.scoring.rubric import ScoringError, Verdict, combine, parse_verdict, support_for

CLEAN = {"citations": {"state": "verified", "valid": 3, "invalid": 0, "cited": 3, "evidence": 4}, "tool_calls": 4,
         "failed_tool_calls": 0, "budget_exhausted": False}


def test_a_verdict_is_read_from_a_fenced_block_amid_prose():
    reply = ('Sure.\n```json\n{"support": "Partially supported", "score": "48", "rationale": "r", '
             '"tags": "red-herring"}\n```')
    verdict = parse_verdict(reply)
    assert (verdict.support, verdict.score, verdict.tags) == ("partly", 48, ["red_herring"])


def test_a_verdict_is_read_from_bare_json_after_other_braces():
    verdict = parse_verdict('Looking at {pods} I conclude {"score": 70, "support": "supported", "rationale": "ok"}')
    assert verdict.score == 70 and verdict.tags == []


@pytest.mark.parametrize("reply, message", [
    ("", "empty reply"),
    ("It is good.", "holds no JSON verdict"),
    ('{"score": 101, "support": "supported", "rationale": "r"}', "score: Input should be less than or equal to 100"),
    ('{"score": 50, "support": "maybe", "rationale": "r"}', "support"),
    ('{"score": 50, "support": "partly", "rationale": ""}', "rationale"),
])
def test_an_unusable_reply_fails_with_its_reason(reply, message):
    with pytest.raises(ScoringError, match=message):
        parse_verdict(reply)


def _verdict(support="supported", score=90, tags=()):
    return Verdict(support=support, score=score, rationale="r", tags=list(tags))


def test_the_score_is_kept_inside_its_support_band():
    assert combine(_verdict("partly", 90), CLEAN).score == 59
    assert combine(_verdict("unsupported", 80), CLEAN).score == 34
    assert combine(_verdict("supported", 10), CLEAN).score == 60


def test_invalid_citations_cap_support_at_partly():
    signals = {**CLEAN, "citations": {"state": "verified", "valid": 1, "invalid": 2, "cited": 3, "evidence": 4}}
    scored = combine(_verdict("supported", 95), signals)
    assert (scored.support, scored.score) == ("partly", 59)
    assert "invalid_citation" in scored.tags


def test_a_missing_citation_check_is_unknown_not_a_pass_or_a_failure():
    scored = combine(_verdict("supported", 88), {**CLEAN, "citations": {"state": "unknown"}})
    assert (scored.support, scored.score, scored.tags, scored.adjustments) == ("supported", 88, [], [])


def test_citing_nothing_budget_and_failing_tools_subtract_points():
    signals = {"citations": {"state": "verified", "valid": 0, "invalid": 0, "cited": 0, "evidence": 5},
               "tool_calls": 4, "failed_tool_calls": 2, "budget_exhausted": True}
    scored = combine(_verdict("supported", 95), signals)
    assert scored.score == 95 - 15 - 5 - 10
    assert scored.tags == ["uncited_claim", "tool_misuse", "budget_exhausted"]
    assert len(scored.adjustments) == 3


def test_each_uncited_finding_costs_points_up_to_a_limit():
    for findings, score in ((1, 75), (2, 70), (5, 65)):
        signals = {**CLEAN, "citations": {**CLEAN["citations"], "uncited_findings": findings}}
        scored = combine(_verdict("supported", 80), signals)
        assert (scored.score, scored.tags) == (score, ["uncited_claim"])


def test_evidence_left_uncited_is_not_a_fault_when_the_analysis_cites_some():
    signals = {**CLEAN, "citations": {"state": "verified", "valid": 1, "invalid": 0, "cited": 1, "evidence": 9,
                                      "uncited_evidence": 8}}
    assert combine(_verdict("supported", 80), signals).score == 80


def test_no_tool_call_caps_support_and_unknown_tags_are_set_aside():
    scored = combine(_verdict("supported", 75, ["red_herring", "vibes"]), {**CLEAN, "tool_calls": 0})
    assert (scored.support, scored.score) == ("partly", 59)
    assert scored.tags == ["red_herring", "no_tool_evidence"] and scored.unknown_tags == ["vibes"]


def test_support_for_names_the_band_of_a_score():
    assert [support_for(s) for s in (0, 34, 35, 59, 60, 100)] == [
        "unsupported", "unsupported", "partly", "partly", "supported", "supported"]
