"""A chain that investigates, then acts: the session's final analysis keeps the investigation's root cause before
the action stage's report, and its executive summary says that cause (never the summary prompt's own words)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tarsy.models import AlertSession, Stage
from tarsy.pipeline.finish import session_finish
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db]

INVESTIGATION = ("**Root cause:** `orders-db-0` is **OOMKilled** at its 256Mi memory limit [E2].\n\n"
                 "**Recommended actions:**\n- Raise the memory limit of `orders-db` to 512Mi.")
REMEDIATION = ("Raised the memory limit of `orders-db` to 512Mi; the pod runs without restarts [E5].\n\n"
               "### Actions\n- `demo-kubernetes.resources_set` (namespace shop): approved by local, ran, verified")


def _session_with(*stages: tuple[str, str, str]) -> AlertSession:
    session = AlertSession.objects.create(alert_type="kubernetes", chain_id="kubernetes", status="in_progress",
                                          alert_data='{"alertname": "KubePodCrashLooping", "namespace": "shop"}',
                                          started_at=timezone.now())
    for index, (name, stage_type, analysis) in enumerate(stages):
        Stage.objects.create(session=session, name=name, index=index, type=stage_type, status="completed",
                             final_analysis=analysis, chain_stage_index=index)
    return session


def test_the_final_analysis_after_an_action_stage_keeps_the_investigations_root_cause(tmp_path):
    write_config(tmp_path)  # the built-in demo provider writes the executive summary
    session = _session_with(("investigate", "investigation", INVESTIGATION), ("remediate", "action", REMEDIATION))

    session_finish(session_id=session.id)

    session.refresh_from_db()
    assert session.status == "completed"
    assert session.final_analysis.startswith(INVESTIGATION)
    assert "## Remediation (stage remediate)" in session.final_analysis
    assert session.final_analysis.rstrip().endswith("ran, verified")
    assert "OOMKilled" in session.executive_summary
    assert "Write the executive summary" not in session.executive_summary


def test_a_chain_without_an_action_stage_ends_with_its_last_stage_as_before(tmp_path):
    write_config(tmp_path)
    session = _session_with(("triage", "investigation", "first look"), ("deep", "investigation", INVESTIGATION))

    session_finish(session_id=session.id)

    session.refresh_from_db()
    assert session.final_analysis == INVESTIGATION
