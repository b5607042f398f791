"""The whole scenario suite as real sessions on a real `celery -A tarsy worker`, PostgreSQL and Redis: every
reference run passes, the demo investigator gets a score, and scenarios broken on purpose are caught."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
import yaml
from django.core.management import call_command

from agents.config import load_config
from evals.runconfig import write_run_config
from evals.runner import run
from evals.scenario import SCENARIOS_DIR, load_all, load_scenario, select
from tarsy.config import set_config
from tarsy.models import AgentExecution, AlertSession, MCPInteraction, TimelineEvent
from tests.support.processes import start_worker

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CONCURRENCY = "6"
BASE = "herring-config-parse-error"  # broken on purpose below; its red herring is an unrelated FailedMount
HERRING_BLAME = ("Thought: The backup pod shows the failure.\nFinal Answer: **Root cause:** query-api crash loops: "
                 "the FailedMount of secret s3-backup breaks the pods; the YAML in query-api-config parses.\n")


def _broken(root, name, change) -> None:
    target = root / name
    shutil.copytree(SCENARIOS_DIR / BASE, target)
    script = yaml.safe_load((target / "reference.yaml").read_text())
    change(script["KubernetesAgent"])
    (target / "reference.yaml").write_text(yaml.safe_dump(script, sort_keys=False))


def _blame_herring(turns) -> None:
    turns[-1] = {"text": HERRING_BLAME}


def _skip_logs(turns) -> None:
    del turns[1]  # the pods_log call the expectations require


def _unrecorded_call(turns) -> None:
    turns.insert(-1, {"text": "Thought: Is there a backup of the config?\nAction: kubernetes-server.resources_get\n"
                              'Action Input: {"apiVersion": "v1", "kind": "ConfigMap", "name": "query-api-config-old", '
                              '"namespace": "search"}\n'})


@pytest.fixture(scope="module")
def suite(tmp_path_factory, django_db_setup, django_db_blocker):
    """One worker for the module, on a configuration holding every scenario, three broken ones, and every chain
    bound to the demo provider; the reference chains are in it too. The commands under test write their own copy
    of the configuration (same names, so the worker serves it) into a directory of their own."""
    root = tmp_path_factory.mktemp("evals")
    broken = root / "broken"
    for name, change in (("broken-blames-herring", _blame_herring), ("broken-skips-tool", _skip_logs),
                         ("broken-unrecorded-tool", _unrecorded_call)):
        _broken(broken, name, change)
    scenarios = load_all(select(None) + select([str(broken)]))
    config_dir = root / "config"
    plan = write_run_config(config_dir, scenarios, provider="demo", concurrency=int(CONCURRENCY))
    with django_db_blocker.unblock():
        worker = start_worker(root, config_dir, concurrency=int(CONCURRENCY) + 2, pool="threads")
    yield plan, broken
    worker.stop()


def _last_json(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


@pytest.mark.timeout(300)
@pytest.mark.usefixtures("suite")
def test_every_reference_run_passes(tmp_path, capsys):
    report = tmp_path / "reference.jsonl"
    # raises CommandError when a reference run does not pass
    call_command("eval", "--no-worker", "--into-main-db", "--config-dir", str(tmp_path / "config"),
                 "--concurrency", CONCURRENCY, "--json", str(report), verbosity=2)
    totals = _last_json(report.read_text())
    assert list(totals)[:6] == ["scenarios", "passed", "failed", "fixture_gaps", "pass_rate", "tokens"]
    assert totals["scenarios"] == len(select(None)) >= 40
    assert (totals["passed"], totals["failed"], totals["fixture_gaps"], totals["pass_rate"]) == (totals["scenarios"], 0,
                                                                                                 0, 1.0)
    assert _last_json(capsys.readouterr().out) == totals
    runs = [json.loads(line) for line in report.read_text().splitlines()[:-1]]
    assert len(runs) == totals["scenarios"] and all(r["session_id"] for r in runs)
    orchestrated = [r for r in runs if load_scenario(SCENARIOS_DIR / r["scenario"]).alert.orchestrate]
    assert len(orchestrated) >= 4
    for r in orchestrated:
        _assert_orchestrated(r["session_id"])


def _assert_orchestrated(session_id: str) -> None:
    """The orchestrator dispatched both agents, each used only its kind of server, and the final analysis cites
    evidence of both."""
    session = AlertSession.objects.get(id=session_id)
    orchestrator = AgentExecution.objects.get(session=session, parent_execution__isnull=True)
    assert orchestrator.agent_name == "Orchestrator"
    children = {c.agent_name: c for c in AgentExecution.objects.filter(parent_execution=orchestrator)}
    assert set(children) == {"KubernetesAgent", "PrometheusAgent"}
    for name, prefix in (("KubernetesAgent", "kubernetes-server-"), ("PrometheusAgent", "prometheus-server-")):
        servers = set(MCPInteraction.objects.filter(execution=children[name]).values_list("server", flat=True))
        assert servers and all(s.startswith(prefix) for s in servers), (name, servers)
    assert session.citations["invalid"] == [], session.citations
    owners = {TimelineEvent.objects.get(session=session, event_type="tool_result", metadata__evidence_id=e["id"])
              .execution_id for e in session.citations["valid"]}
    assert {c.id for c in children.values()} <= owners


@pytest.mark.timeout(600)  # 94 scenarios: 86 were done at 300 s on the shared 2-core machine (load average ~9)
@pytest.mark.usefixtures("suite")
def test_demo_investigator_is_scored_over_the_suite(tmp_path, record_property):
    report = tmp_path / "demo.jsonl"
    call_command("eval", "--provider", "demo", "--no-worker", "--into-main-db", "--config-dir",
                 str(tmp_path / "config"), "--concurrency", CONCURRENCY, "--json", str(report), verbosity=2)
    totals = _last_json(report.read_text())
    record_property("demo_pass_rate", totals["pass_rate"])  # reported, no threshold: it is a rule-based demo
    print(f"demo investigator: {totals}")
    runs = [json.loads(line) for line in report.read_text().splitlines()[:-1]]
    assert totals["passed"] + totals["failed"] + totals["fixture_gaps"] == totals["scenarios"] == len(runs)
    assert all(r["status"] == "completed" for r in runs), [r for r in runs if r["status"] != "completed"]
    providers = set(AgentExecution.objects.filter(session_id__in=[r["session_id"] for r in runs])
                    .values_list("llm_provider", flat=True))
    assert providers == {"demo"}


@pytest.mark.timeout(180)
def test_scenarios_broken_on_purpose_fail_or_show_a_fixture_gap(suite):
    plan, broken = suite
    names = {p.name for p in broken.iterdir()}
    set_config(load_config(plan.config_dir))
    reference = plan.as_reference()
    broken_plan = replace(reference, plans=[p for p in reference.plans if p.scenario.name in names])
    results = {r.scenario: r.score for r in run(broken_plan, concurrency=3)}
    herring, skipped, unrecorded = (results[n] for n in ("broken-blames-herring", "broken-skips-tool",
                                                         "broken-unrecorded-tool"))
    assert herring.outcome == "fail"
    assert [(c.kind, c.name) for c in herring.failed] == [
        ("forbidden", "blames the unrelated FailedMount / s3-backup secret")]
    assert skipped.outcome == "fail"
    assert [c.kind for c in skipped.failed] == ["tool"]
    assert unrecorded.outcome == "gap"
    assert unrecorded.gaps == ['kubernetes-server.resources_get {"apiVersion": "v1", "kind": "ConfigMap", '
                               '"name": "query-api-config-old", "namespace": "search"}']
    assert not unrecorded.failed  # the run itself went well: the scenario lacks a recording
    assert load_scenario(SCENARIOS_DIR / BASE).name == BASE  # the shipped scenario is untouched
