"""/metrics: triage counts by state from the database, time to claim and to resolve observed at the transition,
measured from when the session entered needs_review (its completion, or its latest reopen)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from tarsy.models import AlertSession, TriageActivity
from tarsy.services import triage

pytestmark = [pytest.mark.django_db(transaction=True)]  # the histograms are observed when the change commits


def _scrape() -> str:
    return Client().get("/metrics").content.decode()


def _value(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = rf"^{re.escape(name)}{{{re.escape(wanted)}}} (\S+)$" if labels else rf"^{re.escape(name)} (\S+)$"
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _finished_hours_ago(finished, hours: float, pod: str) -> AlertSession:
    session = finished(severity="high", pod=pod)
    AlertSession.all_objects.filter(id=session.id).update(completed_at=timezone.now() - timedelta(hours=hours))
    return session


def test_triage_counts_and_waiting_times_appear_on_metrics(finished):
    before = _scrape()
    a = _finished_hours_ago(finished, 2, "web-1")   # claimed 2 h after it finished, resolved at once
    b = _finished_hours_ago(finished, 0.1, "web-2")  # resolved without a claim after 6 minutes
    _finished_hours_ago(finished, 0, "web-3")        # still waiting

    triage.claim(session_id=a.id, actor="alice")
    triage.resolve(session_id=a.id, actor="alice", resolution="actioned")
    triage.resolve(session_id=b.id, actor="bob", resolution="false_positive")
    after = _scrape()

    assert _value(after, "tarsy_triage_sessions", state="needs_review") == 1
    assert _value(after, "tarsy_triage_sessions", state="in_progress") == 0
    assert _value(after, "tarsy_triage_sessions", state="resolved") == 2

    def delta(name, **labels):
        return _value(after, name, **labels) - _value(before, name, **labels)

    claim = "tarsy_triage_time_to_claim_seconds"
    assert delta(f"{claim}_count") == 1
    assert delta(f"{claim}_bucket", le="3600.0") == 0 and delta(f"{claim}_bucket", le="7200.0") == 0
    assert delta(f"{claim}_bucket", le="14400.0") == 1  # two hours and a little more
    resolve = "tarsy_triage_time_to_resolve_seconds"
    assert delta(f"{resolve}_count", resolution="actioned") == 1
    assert delta(f"{resolve}_bucket", le="7200.0", resolution="actioned") == 0
    assert delta(f"{resolve}_count", resolution="false_positive") == 1
    assert delta(f"{resolve}_bucket", le="300.0", resolution="false_positive") == 0
    assert delta(f"{resolve}_bucket", le="900.0", resolution="false_positive") == 1


def test_a_reopen_restarts_the_wait(finished):
    session = _finished_hours_ago(finished, 5, "web-1")
    triage.resolve(session_id=session.id, actor="alice", resolution="dismissed")
    triage.reopen(session_id=session.id, actor="bob")
    TriageActivity.objects.filter(session=session, action="reopen").update(
        created_at=timezone.now() - timedelta(minutes=20))
    before = _scrape()
    triage.claim(session_id=session.id, actor="bob")
    after = _scrape()
    name = "tarsy_triage_time_to_claim_seconds_bucket"
    assert _value(after, name, le="900.0") - _value(before, name, le="900.0") == 0
    assert _value(after, name, le="1800.0") - _value(before, name, le="1800.0") == 1  # 20 minutes, not 5 hours


def test_auto_dismissals_count_as_resolved_but_not_as_waiting_time(tmp_path, finished):
    from tests.support.configdir import write_config

    chain = {"alert_types": ["kubernetes"], "stages": [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}],
             "triage": {"auto_dismiss": {"max_severity": "info"}}}
    write_config(tmp_path / "config", tarsy={"agent_chains": {"kubernetes": chain}})
    before = _scrape()
    finished(severity="info")
    after = _scrape()
    assert _value(after, "tarsy_triage_sessions", state="resolved") == 1
    name = "tarsy_triage_time_to_resolve_seconds_count"
    assert _value(after, name, resolution="dismissed") == _value(before, name, resolution="dismissed")
