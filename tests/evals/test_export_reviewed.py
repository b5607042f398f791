"""`export_scenario --reviewed RATING DIR`: sessions engineers marked (e.g. inaccurate) become eval candidates,
their review carried into the draft expectations; the scenario loader reads what it writes."""

from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import CommandError, call_command

from evals.scenario import load_scenario
from tarsy.models import (
    AgentExecution,
    AlertSession,
    LLMInteraction,
    MCPInteraction,
    SessionCounters,
    SessionReview,
    Stage,
)
from tarsy.services.intake.alerts import session_submit

pytestmark = [pytest.mark.django_db]

WRONG = "Root cause: the node ran out of disk space."


def _investigated(analysis: str) -> AlertSession:
    session = session_submit(alert_type="kubernetes", data={"alertname": "KubePodCrashLooping", "pod": "web-1"})
    AlertSession.objects.filter(id=session.id).update(status="completed", final_analysis=analysis)
    SessionCounters.objects.filter(session_id=session.id).update(total_tokens=100)
    stage = Stage.objects.create(session=session, name="analysis", index=0, status="completed")
    execution = AgentExecution.objects.create(stage=stage, session=session, agent_name="KubernetesAgent",
                                              iteration_strategy="react", status="completed")
    LLMInteraction.objects.create(session=session, execution=execution, iteration=1, interaction_type="iteration",
                                  provider="scripted", conversation=[{"role": "user", "content": "alert"}, {
                                      "role": "assistant", "content": f"Final Answer: {analysis}"}])
    MCPInteraction.objects.create(session=session, execution=execution, iteration=1, server="kubernetes-server",
                                  tool="pods_log", arguments={"name": "web-1"}, result="permission denied")
    return AlertSession.objects.get(id=session.id)


def test_sessions_reviewed_inaccurate_are_exported_as_candidates(tmp_path):
    wrong = _investigated(WRONG)
    right = _investigated("Root cause: the config map is missing.")
    SessionReview.objects.create(session=wrong, rating="inaccurate", author="alice",
                                 feedback="It was the volume's permissions, not the disk.", action_taken="chmod")
    SessionReview.objects.create(session=right, rating="accurate", author="bob")
    out = io.StringIO()
    call_command("export_scenario", "--reviewed", "inaccurate", str(tmp_path / "candidates"), stdout=out)

    [folder] = list((tmp_path / "candidates").iterdir())
    assert folder.name == f"kubernetes-{str(wrong.id)[:8]}"
    assert "1 of 1 sessions reviewed inaccurate" in out.getvalue()
    text = (folder / "expect.yaml").read_text()
    assert "Reviewed inaccurate by alice." in text and "volume's permissions" in text and "chmod" in text
    expect = yaml.safe_load(text)
    assert expect["forbidden"][0]["any"] == ["the node ran out of disk space."]
    assert expect["findings"][0]["any"] == ["DRAFT"]  # the wrong conclusion is never what a run must say
    scenario = load_scenario(folder)
    assert scenario.name == folder.name

    # Re-runnable: an existing candidate is left alone (someone may be editing it).
    (folder / "expect.yaml").write_text(text + "\n# edited\n")
    err = io.StringIO()
    call_command("export_scenario", "--reviewed", "inaccurate", str(tmp_path / "candidates"), stdout=io.StringIO(),
                 stderr=err)
    assert "left as it is" in err.getvalue() and (folder / "expect.yaml").read_text().endswith("# edited\n")


def test_export_needs_a_session_or_a_rating_not_both(tmp_path):
    for args in ((str(tmp_path / "x"),), ("abc", str(tmp_path / "x"), "--reviewed", "inaccurate")):
        with pytest.raises(CommandError, match="either a session id or --reviewed"):
            call_command("export_scenario", *args)
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("export_scenario", "--reviewed", "meh", str(tmp_path / "x"))
