"""A chain's auto-dismiss policy: calm completed sessions (and, with `min_score`, well-scored ones) skip the human
review — resolved as dismissed by `system`, with the reason in the log — and nothing else is touched."""

from __future__ import annotations

import pytest

from agents.config import ConfigError, load_config
from tarsy.models import AlertSession, Event, SessionScore, TriageActivity
from tarsy.services import quality, triage
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db]
SCORER = {"scorer": {"type": "scripted", "script": {"scoring": []}}}


def _policy(tmp_path, auto_dismiss, *, scoring=False):
    chain = {"alert_types": ["kubernetes"], "stages": [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}],
             "triage": {"auto_dismiss": auto_dismiss}}
    tarsy = {"agent_chains": {"kubernetes": chain}}
    if scoring:
        tarsy["scoring"] = {"llm_provider": "scorer"}
    write_config(tmp_path / "config", tarsy=tarsy, providers=SCORER)


def _store_score(session, score):
    SessionScore.objects.update_or_create(session_id=session.id, defaults={"status": "pending"})
    quality.score_store(session_id=session.id, score=score, support="supported", scorer_score=score, rationale="ok",
                        tags=[], signals={}, provider="scorer", model="m")


def test_a_calm_completed_session_is_dismissed_by_system_with_the_reason(tmp_path, finished):
    _policy(tmp_path, {"max_severity": "warning"})
    calm = finished(severity="warning")
    loud = finished(severity="high", pod="web-2")
    failed = finished(severity="info", status="failed", pod="web-3")

    calm.refresh_from_db()
    assert (calm.triage_status, calm.resolution, calm.assignee) == ("resolved", "dismissed", "")
    log = TriageActivity.objects.get(session=calm)
    assert (log.actor, log.action, log.from_status, log.to_status) == ("system", "auto_dismiss", "needs_review",
                                                                      "resolved")
    assert log.note == calm.resolution_note == ("auto-dismissed by chain kubernetes: severity warning "
                                                "(at most warning)")
    event = Event.objects.filter(session_id=calm.id, type="triage.updated", channel="sessions").get()
    assert (event.payload["triage_status"], event.payload["actor"]) == ("resolved", "system")
    for other in (loud, failed):  # too severe; not a completed investigation
        other.refresh_from_db()
        assert other.triage_status == "needs_review"
        assert not TriageActivity.objects.filter(session=other).exists()


def test_with_min_score_the_dismissal_waits_for_a_high_enough_score(tmp_path, finished):
    _policy(tmp_path, {"max_severity": "info", "min_score": 80}, scoring=True)
    high, low, claimed = finished(), finished(pod="web-2"), finished(pod="web-3")
    assert AlertSession.objects.get(id=high.id).triage_status == "needs_review"  # no score yet

    triage.claim(session_id=claimed.id, actor="alice")
    _store_score(high, 85)
    _store_score(low, 79)
    _store_score(claimed, 95)

    states = dict(AlertSession.objects.filter(id__in=[high.id, low.id, claimed.id]).values_list("id", "triage_status"))
    assert states == {high.id: "resolved", low.id: "needs_review", claimed.id: "in_progress"}
    assert TriageActivity.objects.get(session=high).note.endswith("automatic score 85 (at least 80)")

    # Reopened by a person, a later re-score does not dismiss it again.
    triage.reopen(session_id=high.id, actor="bob")
    _store_score(high, 99)
    assert AlertSession.objects.get(id=high.id).triage_status == "needs_review"


def test_the_policy_is_validated_with_the_configuration(tmp_path):
    directory = tmp_path / "config"
    bad = [({"max_severity": "low"}, "triage.auto_dismiss.max_severity"),
           ({"max_severity": "info", "min_score": 101}, "triage.auto_dismiss.min_score"),
           ({"max_severity": "info", "min_score": 80}, "needs automatic scoring")]
    for rule, expected in bad:
        with pytest.raises(ConfigError) as caught:
            _policy(tmp_path, rule)
        assert any(expected in problem for problem in caught.value.problems), caught.value.problems
    _policy(tmp_path, {"max_severity": "info", "min_score": 80}, scoring=True)
    assert load_config(directory).chains["kubernetes"].triage.auto_dismiss.min_score == 80
