"""Scenario pairs for investigation memory: a prior incident, and a recurrence whose memory fixtures say what the
prior investigation learned. The recurrence's reference run recalls it, and its expectations need it."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
import yaml

from agents.config import load_config
from agents.mcp.client import stdio_environment
from evals.adversaries import observation, reference_answer, reference_calls
from evals.fixtures import ScenarioError
from evals.memories import RETIRED_REASON, load_memories
from evals.runconfig import write_run_config
from evals.scenario import MEMORY_SERVER, SCENARIOS_DIR, load_all, load_scenario, select
from evals.scoring import score
from tarsy.models import Memory, MemoryState

RECURRENCES = sorted(s.name for s in load_all(select(["recurrence-*"])))
RECALL = f"{MEMORY_SERVER}.recall_past_investigations"
TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"  # a GitHub token shape the masking patterns catch

# An answer from the tool output alone: it blames the look-alike that only the memory rules out.
IGNORES_MEMORY = {
    "recurrence-settlement-nightly-lag": "**Root cause:** the Kafka consumer lag of 177k on ledger-entries delays "
                                         "the clearing files: settlement-worker cannot keep up with its input.",
    "recurrence-query-router-slo-burn": "**Root cause:** CPU throttling of query-router (37%) causes the 503s: the "
                                        "pods are starved and requests fail.",
    "recurrence-invoice-api-batch-user-locks": "**Root cause:** the 62 s replica lag on billing-db-replica-0 causes "
                                               "invoice creation to wait for replicated rows.",
    "recurrence-thumbnail-errors-s3-throttling": "**Root cause:** image-resizer is out of CPU: the HPA at its maximum "
                                                 "of 40 replicas is why thumbnails time out.",
}


def test_there_are_four_pairs_of_a_prior_incident_and_a_differently_worded_recurrence():
    assert len(RECURRENCES) >= 4 and set(IGNORES_MEMORY) == set(RECURRENCES)
    priors = {s.name: s for s in load_all(select(["prior-*"]))}
    for name in RECURRENCES:
        recurrence = load_scenario(SCENARIOS_DIR / name)
        assert recurrence.memories, name
        prior = next(p for p in priors.values() if all(
            p.alert.data[k] == recurrence.alert.data[k] for k in ("cluster", "namespace", "service")))
        assert not prior.memories and prior.alert.data["alertname"] != recurrence.alert.data["alertname"]
        assert prior.alert.data["summary"] != recurrence.alert.data["summary"]
        labels = {k: recurrence.alert.data[k] for k in ("cluster", "namespace", "service")}
        assert all(m.labels == labels for m in recurrence.memories), name  # in scope of the recurrence
        assert [r.label for r in recurrence.expect.tools][0] == RECALL
        assert reference_calls(recurrence)[0].tool == "recall_past_investigations"  # it recalls first


@pytest.mark.parametrize("name", RECURRENCES)
def test_the_recurrence_reference_answer_passes(name):
    scenario = load_scenario(SCENARIOS_DIR / name)
    result = score(scenario.expect, observation(scenario, reference_answer(scenario)))
    assert result.outcome == "pass", [(c.name, c.reason, c.detail) for c in result.failed]


@pytest.mark.parametrize("name", RECURRENCES)
def test_an_answer_that_ignores_the_memory_blames_the_look_alike_and_fails(name):
    scenario = load_scenario(SCENARIOS_DIR / name)
    result = score(scenario.expect, observation(scenario, IGNORES_MEMORY[name]))
    assert result.outcome == "fail"
    reasons = {(c.kind, c.reason) for c in result.failed}
    assert reasons == {("forbidden", "blamed_red_herring"), ("finding", "missing_finding"),
                       ("component", "wrong_component")}, result.failed  # and the look-alike is not the culprit


@pytest.mark.parametrize("name", RECURRENCES)
def test_a_run_that_does_not_recall_is_flagged_missing_tool(name):
    scenario = load_scenario(SCENARIOS_DIR / name)
    calls = [c for c in reference_calls(scenario) if c.server != MEMORY_SERVER]
    result = score(scenario.expect, observation(scenario, reference_answer(scenario), calls))
    assert result.outcome == "fail"
    assert [(c.kind, c.name, c.reason) for c in result.failed] == [("tool", RECALL, "missing_tool")]


def test_a_failed_recall_does_not_count():
    scenario = load_scenario(SCENARIOS_DIR / RECURRENCES[0])
    calls = [replace(c, success=False, error="database unavailable") if c.server == MEMORY_SERVER else c
             for c in reference_calls(scenario)]
    result = score(scenario.expect, observation(scenario, reference_answer(scenario), calls))
    assert [(c.name, c.reason) for c in result.failed] == [(RECALL, "missing_tool")]


def _copy(tmp_path, memories) -> str:
    target = tmp_path / "recurrence-copy"
    shutil.copytree(SCENARIOS_DIR / RECURRENCES[0], target)
    (target / "memories.yaml").write_text(yaml.safe_dump(memories, sort_keys=False))
    return target


def test_bad_memory_fixtures_are_reported_with_their_place(tmp_path):
    bad = [{"kind": "rumour", "text": "", "labels": {"team": "x"}, "confidence": 2, "session": "S1",
            "evidence": ["3"]}]
    with pytest.raises(ScenarioError) as caught:
        load_scenario(_copy(tmp_path, bad))
    problems = "\n".join(caught.value.problems)
    for where in ("memories.yaml: 0: kind: unknown kind 'rumour'", "0: text:", "0: labels: unknown scope label team",
                  "0: confidence:", "0: session:", "0: evidence.0:"):
        assert where in problems, problems
    (tmp_path / "recurrence-copy" / "expect.yaml").write_text(
        "culprit: [xy]\nfindings: [{name: x, any: [x]}]\ntools: [tarsy.forget_everything]\n")
    (tmp_path / "recurrence-copy" / "memories.yaml").unlink()
    with pytest.raises(ScenarioError, match="unknown tool 'forget_everything' of the tarsy server"):
        load_scenario(tmp_path / "recurrence-copy")


def test_a_recurrence_selects_the_memory_server_and_memory_is_on_without_reflection(tmp_path):
    recurrence = load_scenario(SCENARIOS_DIR / "recurrence-query-router-slo-burn")
    prior = load_scenario(SCENARIOS_DIR / "prior-query-router-envoy-overflow")
    plan = write_run_config(tmp_path / "ref", [recurrence, prior])
    config = load_config(tmp_path / "ref")
    assert config.memory.enabled
    by_name = {p.scenario.name: p for p in plan.plans}
    assert {"name": MEMORY_SERVER} in by_name[recurrence.name].mcp_selection["servers"]
    assert {"name": MEMORY_SERVER} not in by_name[prior.name].mcp_selection["servers"]
    for p in plan.plans:
        memory = config.chain(p.chain_id or config.chain_for_alert_type(p.alert_type)).memory
        assert (memory.recall, memory.reflect) == (p.scenario is recurrence, False)
    # the memory server reads the database the run names (evals.database sets TARSY_DATABASE_NAME)
    env = stdio_environment(config.mcp_servers[MEMORY_SERVER].transport, {"TARSY_DATABASE_NAME": "x_eval"})
    assert env["TARSY_DATABASE_NAME"] == "x_eval"

    write_run_config(tmp_path / "demo", [recurrence, prior], provider="demo")
    config = load_config(tmp_path / "demo")
    assert config.memory.enabled
    assert all((c.memory.recall, c.memory.reflect) == (False, False)
               for cid, c in config.chains.items() if not cid.startswith("eval-reference-"))

    # a run without memory fixtures (a replay, the other scenarios) leaves memory as the deployment has it
    write_run_config(tmp_path / "plain", [prior])
    config = load_config(tmp_path / "plain")
    assert not config.memory.enabled
    assert all((c.memory.recall, c.memory.reflect) == (True, True) for c in config.chains.values())


@pytest.mark.django_db
def test_memory_fixtures_load_masked_with_provenance_once(tmp_path):
    scenario = load_scenario(SCENARIOS_DIR / "recurrence-settlement-nightly-lag")
    secret = scenario.memories[0].model_copy(update={"text": f"the sftp deploy key token: {TOKEN} was rotated"})
    planted = replace(scenario, memories=(secret, *scenario.memories[1:]))
    loaded = load_memories([planted])
    assert len(loaded) == 2 and Memory.objects.count() == 2
    first = Memory.objects.get(id=loaded[0].id)
    assert TOKEN not in first.text and "__MASKED_" in first.text
    assert first.kind == "fact" and first.confidence == 0.85 and first.state == MemoryState.ACTIVE
    assert first.labels == {"cluster": "ledger-prod-use2", "namespace": "settlement", "service": "settlement-worker"}
    assert first.source_sessions == [str(secret.session)] and first.evidence_ids == ["E2"]

    assert [m.id for m in load_memories([planted])] == [m.id for m in loaded]  # a second run adds nothing
    assert Memory.objects.count() == 2

    # the scenario's text changed: the old memory is retired, the new one recalled instead
    assert [m.id for m in load_memories([scenario])][1] == loaded[1].id
    first.refresh_from_db()
    assert first.state == MemoryState.RETIRED and first.retired_reason == RETIRED_REASON
    assert Memory.objects.filter(state=MemoryState.ACTIVE).count() == 2
