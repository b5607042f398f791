"""Deterministic scoring of one run against its expectations."""

from __future__ import annotations

from evals.fixtures import gap_message
from evals.scenario import Expect
from evals.scoring import Call, Observation, score

EXPECT = Expect.model_validate({
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
    result = score(EXPECT, _obs(final_analysis="web is in CrashLoopBackOff.", tokens=12000,
                                calls=[Call("kubernetes-server", "pods_log", {"name": "web-1"}, True)] * 4))
    assert result.outcome == "fail"
    assert {(c.kind, c.name) for c in result.failed} == {
        ("finding", "root cause"), ("tool", "kubernetes-server.pods_log(previous=True)"),
        ("tool", "kubernetes-server.pods_get or kubernetes-server.resources_get"),
        ("budget", "max_tokens"), ("budget", "max_tool_calls")}


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
