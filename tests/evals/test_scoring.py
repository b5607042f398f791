"""Deterministic scoring of one run against its expectations."""

from __future__ import annotations

from dataclasses import replace

from evals.fixtures import gap_message
from evals.scenario import Expect
from evals.scoring import Call, Observation, Proposal, score

EXPECT = Expect.model_validate({
    "culprit": ["orders-db"], "victim": "web",
    "findings": [{"name": "root cause", "any": ["orders-db is OOMKilled", {"regex": r"memory limit of \d+Mi"}]},
                 {"name": "the crash loop", "any": ["CrashLoopBackOff"]}],
    "forbidden": [{"name": "blames disk pressure", "any": ["disk pressure"]}],
    "tools": [{"tool": "kubernetes-server.pods_log", "args": {"previous": True}},
              {"any": ["kubernetes-server.pods_get", "kubernetes-server.resources_get"]}],
    "budgets": {"max_iterations": 5, "max_tokens": 10000, "max_tool_calls": 3},
})
GOOD = ("**Root cause:** `orders-db` is **OOMKilled**; web is in CrashLoopBackOff.\n"
        "The DiskPressure warning on worker-2 is unrelated: disk pressure there evicted nothing of ours.")
CALLS = [Call("kubernetes-server", "pods_log", {"name": "web-1", "previous": True}, True),
         Call("kubernetes-server", "pods_get", {"name": "orders-db-0"}, True)]


def _obs(**changes) -> Observation:
    values = {"status": "completed", "error": "", "final_analysis": GOOD, "calls": list(CALLS), "iterations": 3,
              "tokens": 8000}
    values.update(changes)
    return Observation(**values)


def test_a_good_investigation_passes_and_may_dismiss_the_red_herring():
    result = score(EXPECT, _obs())
    assert result.outcome == "pass", result.failed


def test_blaming_the_red_herring_fails():
    analysis = GOOD.replace("The DiskPressure warning on worker-2 is unrelated: disk pressure there evicted nothing of "
                            "ours.", "Disk pressure on worker-2 also evicts the web pods.")
    result = score(EXPECT, _obs(final_analysis=analysis))
    assert result.outcome == "fail"
    assert [(c.kind, c.name) for c in result.failed] == [("forbidden", "blames disk pressure")]


def test_missing_finding_tool_and_budget_each_fail():
    result = score(EXPECT, _obs(final_analysis="**Root cause:** web is in CrashLoopBackOff.", tokens=12000,
                                calls=[Call("kubernetes-server", "pods_log", {"name": "web-1"}, True)] * 4))
    assert result.outcome == "fail"
    assert {(c.kind, c.name) for c in result.failed} == {
        ("finding", "root cause"), ("tool", "kubernetes-server.pods_log(previous=True)"),
        ("tool", "kubernetes-server.pods_get or kubernetes-server.resources_get"),
        ("budget", "max_tokens"), ("budget", "max_tool_calls"),
        ("component", "attributes the cause to the culprit")}  # web is the victim: orders-db is not named


def test_a_failed_call_does_not_satisfy_a_required_tool():
    calls = [Call("kubernetes-server", "pods_log", {"previous": True}, False, "previous container not found"), CALLS[1]]
    assert [c.kind for c in score(EXPECT, _obs(calls=calls)).failed] == ["tool"]


def test_a_fixture_gap_is_reported_apart_from_failures():
    gap = Call("kubernetes-server", "resources_get", {"kind": "Node"}, False,
               gap_message("kubernetes-server.resources_get", {"kind": "Node"}))
    result = score(EXPECT, _obs(calls=[*CALLS, gap]))
    assert result.outcome == "gap"
    assert result.gaps == ['kubernetes-server.resources_get {"kind": "Node"}']


def test_a_session_that_did_not_complete_fails():
    result = score(EXPECT, _obs(status="failed", error="LLM unavailable"))
    assert ("session", "completed") in [(c.kind, c.name) for c in result.failed]


def _reasons(result) -> list[tuple[str, str]]:
    return [(c.reason, c.name) for c in result.failed]


def test_each_failure_names_its_reason():
    blamed = GOOD.replace("The DiskPressure warning on worker-2 is unrelated: disk pressure there evicted nothing of "
                          "ours.", "Disk pressure on worker-2 also evicts the web pods.")
    assert _reasons(score(EXPECT, _obs(final_analysis=blamed))) == [("blamed_red_herring", "blames disk pressure")]
    result = score(EXPECT, _obs(final_analysis="**Root cause:** web is in CrashLoopBackOff.", tokens=12000, calls=[]))
    assert set(_reasons(result)) == {
        ("missing_finding", "root cause"), ("missing_tool", "kubernetes-server.pods_log(previous=True)"),
        ("missing_tool", "kubernetes-server.pods_get or kubernetes-server.resources_get"),
        ("missing_tool", "any successful call"), ("budget", "max_tokens"),
        ("wrong_component", "attributes the cause to the culprit")}


def test_a_finding_stated_negatively_or_only_in_the_evidence_does_not_count():
    negated = "**Root cause:** orders-db is not OOMKilled; web is in CrashLoopBackOff. Memory limit of 512Mi is fine."
    assert [r for r, _ in _reasons(score(EXPECT, _obs(final_analysis=negated)))] == ["missing_finding"]
    evidence = ("**Root cause:** web is in CrashLoopBackOff.\n\n### Evidence\n- orders-db is OOMKilled at its memory "
                "limit of 512Mi.\n")
    assert _reasons(score(EXPECT, _obs(final_analysis=evidence))) == [
        ("evidence_only", "root cause"), ("wrong_component", "attributes the cause to the culprit")]


def test_an_answer_without_a_root_cause_statement_fails_as_evidence_only():
    dump = "orders-db is OOMKilled; web is in CrashLoopBackOff."
    assert ("evidence_only", "root-cause statement") in _reasons(score(EXPECT, _obs(final_analysis=dump)))


def test_a_dismissal_excuses_only_the_clause_that_names_the_red_herring():
    hedged = GOOD.replace("The DiskPressure warning on worker-2 is unrelated: disk pressure there evicted nothing of "
                          "ours.", "Disk pressure on worker-2 evicts the web pods, although the log is unrelated.")
    assert _reasons(score(EXPECT, _obs(final_analysis=hedged))) == [("blamed_red_herring", "blames disk pressure")]
    for dismissal in ("Disk pressure on worker-2 has nothing to do with it.", "No node reports disk pressure.",
                      "Although disk pressure shows in the events, the cause is the memory limit."):
        assert score(EXPECT, _obs(final_analysis=GOOD + "\n" + dismissal)).outcome == "pass", dismissal


def test_several_candidate_causes_fail_as_uncommitted():
    sink = GOOD.replace("**Root cause:** ", "**Root cause:** it could be one of several things: ")
    assert _reasons(score(EXPECT, _obs(final_analysis=sink))) == [("uncommitted", "commits to one cause")]


def test_an_abstaining_scenario_needs_the_answer_to_say_the_evidence_shows_no_cause():
    expect = Expect.model_validate({"expect": "abstain", "forbidden": EXPECT.model_dump()["forbidden"]})
    plain = "**Root cause:** undetermined — the evidence does not show why web restarted.\n\n### Evidence\n- none."
    assert score(expect, _obs(final_analysis=plain)).outcome == "pass"
    assert _reasons(score(expect, _obs())) == [("confabulated", "says the evidence shows no cause")]


def test_a_dotted_name_does_not_end_a_regex_window():
    expect = Expect.model_validate({"culprit": ["app"],
                                    "findings": [{"name": "bad tag", "any": [{"regex": "app[^.]{0,40}not found"}]}]})
    answer = "**Root cause:** the image app ghcr.io/acme/app:2.8.1 is not found in the registry."
    assert score(expect, _obs(final_analysis=answer)).outcome == "pass"


def test_an_open_question_after_the_cause_is_not_an_abstention():
    caveat = GOOD.replace("web is in CrashLoopBackOff.", "web is in CrashLoopBackOff. Why memory grew is unknown.")
    assert score(EXPECT, _obs(final_analysis=caveat)).outcome == "pass"
    unsure = GOOD.replace("**Root cause:** ", "**Root cause:** undetermined; ")
    assert _reasons(score(EXPECT, _obs(final_analysis=unsure))) == [("uncommitted", "commits to one cause")]


def test_a_conclusion_made_of_pasted_tool_output_fails_as_evidence_only():
    log = ("2025-06-03T14:05:01Z starting indexer\nheap in use 436MiB after batch 3\norders-db is OOMKilled at "
           "its memory limit of 512Mi\nweb is in CrashLoopBackOff")
    calls = [*CALLS[:1], Call("kubernetes-server", "pods_get", {"name": "orders-db-0"}, True, "", log)]
    pasted = "**Root cause:** " + "; ".join(f"pods_get says {line} [E2]" for line in log.splitlines())
    assert _reasons(score(EXPECT, _obs(final_analysis=pasted, calls=calls))) == [
        ("evidence_only", "root-cause statement")]
    assert score(EXPECT, _obs(calls=calls)).outcome == "pass"


ACTS = Expect.model_validate({
    "culprit": ["deployment"],
    "findings": [{"name": "replicas 0", "any": ["replicas set to 0"]}],
    "actions": {"expect": "propose", "proposals": [{
        "tool": "k8s.resources_scale", "args": {"name": "api", "scale": 3}, "outcome": "verified",
        "evidence": [{"tool": "k8s.resources_get", "args": {"name": "api"}}]}]},
})
READS = [Call("k8s", "resources_get", {"kind": "Deployment", "name": "api"}, True, result="replicas: 0",
              evidence_id="E1"),
         Call("k8s", "events_list", {"namespace": "shop"}, True, result="", evidence_id="E2")]
SCALE = Proposal("k8s", "resources_scale", {"kind": "Deployment", "name": "api", "scale": 3},
                 "api has replicas 0 [E1]", "verified")


def _acted(*proposals, expect=ACTS) -> list:
    obs = _obs(final_analysis="**Root cause:** the rollout left the Deployment with replicas set to 0 [E1].",
               calls=READS, proposals=list(proposals))
    return sorted((c.reason, c.name) for c in score(expect, obs).failed)


def test_the_expected_action_cited_and_verified_passes():
    assert _acted(SCALE) == []


def test_an_action_citing_only_evidence_that_does_not_show_it_fails():
    assert [r for r, _ in _acted(replace(SCALE, justification="the events say so [E2]"))] == ["uncited_action"]


def test_an_action_that_did_not_end_as_expected_fails():
    assert _acted(replace(SCALE, ended="rejected")) == [("action_outcome", "k8s.resources_scale ends verified")]
    assert [r for r, _ in _acted(replace(SCALE, ended="not_verified"))] == ["action_outcome"]


def test_no_action_expected_fails_on_any_proposal():
    none = ACTS.model_copy(update={"actions": ACTS.actions.model_copy(update={"expect": "none", "proposals": []})})
    assert _acted(expect=none) == []
    assert [r for r, _ in _acted(SCALE, expect=none)] == ["unexpected_action"]
