"""Exact replay and capture of a session investigated through the normal pipeline (demo investigator, demo
cluster) on real worker processes, PostgreSQL and Redis."""

from __future__ import annotations

import io
import json

import pytest
import yaml
from django.core.management import CommandError, call_command

from evals.replay import prepare_replay
from evals.runconfig import write_run_config
from evals.scenario import load_scenario
from tarsy.models import MCPInteraction
from tarsy.services.intake.alerts import session_submit
from tests.support.configdir import write_config
from tests.support.processes import start_worker
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(150)]

ALERT = {"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": "web-7d9c8b6f5-x2k4q"}


@pytest.fixture
def recorded(tmp_path, settings):
    """A finished session: the demo investigator on the demo cluster, run by a worker that is gone afterwards."""
    base = tmp_path / "base"
    write_config(base, tarsy={"defaults": {"llm_provider": "demo"},
                              "agents": {"KubernetesAgent": {"mcp_servers": ["demo-kubernetes"]}}})
    settings.TARSY_CONFIG_DIR = str(base)  # the commands build on the same configuration
    worker = start_worker(tmp_path, base, name="recorder", pool="threads")
    try:
        session = session_submit(alert_type="kubernetes", data=ALERT)
        (done,) = wait_terminal([session.id], 60, worker)
    finally:
        worker.stop()
    assert done.status == "completed", done.error_message
    assert MCPInteraction.objects.filter(session=done).count() >= 4
    return done, base


def _replay(session, base, tmp_path) -> tuple[str, str]:
    """`manage.py replay --no-worker` with a worker started on the replay's configuration."""
    directory = tmp_path / "replay"
    plan, _ = prepare_replay(session.id, directory, base_dir=str(base))
    worker = start_worker(tmp_path, plan.config_dir, name="replayer", pool="threads")
    out = io.StringIO()
    try:
        call_command("replay", str(session.id), "--no-worker", "--config-dir", str(directory), stdout=out, verbosity=2)
        error = ""
    except CommandError as exc:
        error = str(exc)
    finally:
        worker.stop()
    return out.getvalue(), error


def test_replay_reproduces_the_recorded_session_event_by_event(recorded, tmp_path):
    session, base = recorded
    output, error = _replay(session, base, tmp_path)
    assert not error, output
    assert "the timeline matches" in output
    events = int(output.rsplit("(", 1)[1].split()[0])
    assert events >= 15  # thinking, tool calls, results, final analysis and the executive summary


def test_replay_reports_a_changed_tool_output(recorded, tmp_path):
    session, base = recorded
    logs = MCPInteraction.objects.get(session=session, tool="pods_log")
    assert "connection refused" in logs.result
    MCPInteraction.objects.filter(id=logs.id).update(result=logs.result.replace("connection refused", "timed out"))
    output, error = _replay(session, base, tmp_path)
    assert error == "the replay does not match the original timeline"
    assert "stage #0 analysis / KubernetesAgent" in output
    assert "(mcp_tool_call): content was" in output
    assert "(tool_result): content was" in output
    assert "timed out" in output


def test_an_exported_session_passes_as_a_scenario_with_its_own_reference_run(recorded, tmp_path):
    session, base = recorded
    folder = tmp_path / "scenarios" / "shop-web-crashloop"
    call_command("export_scenario", str(session.id), str(folder), stdout=io.StringIO())
    alert = yaml.safe_load((folder / "alert.yaml").read_text())
    assert alert == {"alert_type": "kubernetes", "data": ALERT}
    tools = yaml.safe_load((folder / "tools.yaml").read_text())
    recorded_calls = MCPInteraction.objects.filter(session=session)
    assert sum(map(len, tools.values())) == recorded_calls.count()
    assert all(f["match"] == "exact" for fixtures in tools.values() for f in fixtures)
    expect = yaml.safe_load((folder / "expect.yaml").read_text())
    assert expect["findings"][0]["any"][0] in session.final_analysis.replace("**", "").replace("`", "")
    assert "DRAFT" in (folder / "expect.yaml").read_text()
    plan = write_run_config(tmp_path / "config", [load_scenario(folder)], concurrency=1, base_dir=str(base))
    worker = start_worker(tmp_path, plan.config_dir, name="exported", pool="threads")
    report = tmp_path / "report.jsonl"
    try:
        call_command("eval", "--scenario", str(folder), "--no-worker", "--into-main-db",  # the test's worker's db
                     "--config-dir", str(tmp_path / "cmd"), "--json", str(report), stdout=io.StringIO(), verbosity=2)
    finally:
        worker.stop()
    totals = json.loads(report.read_text().splitlines()[-1])
    assert (totals["scenarios"], totals["passed"], totals["tokens"]) == (1, 1, session.counters.total_tokens)


def test_replay_and_export_refuse_unknown_and_unfinished_sessions(tmp_path):
    pending = session_submit(alert_type="kubernetes", data=ALERT)  # no worker: it stays pending
    for args, message in (
        (("replay", "not-a-session"), "session not-a-session not found: not a session id"),
        (("replay", "00000000-0000-0000-0000-000000000000"), "session 00000000-0000-0000-0000-000000000000 not found"),
        (("export_scenario", str(pending.id), str(tmp_path / "x")), "is pending: only a finished session"),
        (("export_scenario", str(pending.id), str(tmp_path / "Not_A_Name")), "lowercase letters, digits and dashes"),
    ):
        with pytest.raises(CommandError, match=message):
            call_command(*args, "--config-dir", str(tmp_path / "c")) if args[0] == "replay" else call_command(*args)
    assert not (tmp_path / "x").exists()
