"""The session detail reads a session in a fixed number of queries (`selectors.sessions.session_detail`), however
many stages, executions and joined alerts it has."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tarsy.models import AgentExecution, AlertOccurrence, OccurrenceKind, SessionScore, Stage
from tarsy.selectors.sessions import RECENT_OCCURRENCES
from tarsy.services import quality

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]

# The events cursor, the session with its score and review, its stages, their executions, its related alerts
# and its latest repeats.
DETAIL_QUERIES = 6


def _grown(session, *, stages: int, executions: int, alerts: int) -> None:
    """More of everything the detail shows: stages, executions per stage, related alerts and repeats."""
    for index in range(1, stages + 1):
        stage = Stage.objects.create(session=session, name=f"stage-{index}", index=index, status="completed")
        for agent in range(executions):
            AgentExecution.objects.create(stage=stage, session=session, agent_name=f"Agent{agent}",
                                          agent_index=agent, status="completed", input_tokens=10, total_tokens=10)
    for n in range(alerts):
        for kind in OccurrenceKind.values:
            AlertOccurrence.objects.create(session=session, kind=kind, alert_type="kubernetes",
                                           fingerprint=f"fp-{n}", alert_data=f"alert {n}")


def _queries(api, session) -> tuple[int, dict]:
    with CaptureQueriesContext(connection) as queries:
        response = api.get(f"/api/v1/sessions/{session.id}")
    assert response.status_code == 200
    return len(queries), response.json()


def test_detail_query_count_does_not_grow_with_stages_executions_or_alerts(api, investigated):
    small, large = investigated(), investigated()
    for session in (small, large):
        SessionScore.objects.create(session=session, status="scored", score=80, support="supported")
        quality.review_save(session_id=session.id, rating="accurate", author="sre")
    _grown(large, stages=4, executions=3, alerts=5)

    small_count, small_body = _queries(api, small)
    large_count, large_body = _queries(api, large)

    assert (len(small_body["stages"]), len(large_body["stages"])) == (1, 5)
    assert sum(len(s["executions"]) for s in large_body["stages"]) == 13
    assert (len(large_body["related_alerts"]), len(large_body["recent_occurrences"])) == (5, 5)
    assert large_body["score"]["score"] == 80 and large_body["review"]["rating"] == "accurate"
    assert small_count == large_count == DETAIL_QUERIES


def test_a_queued_session_reads_its_place_in_the_queue_in_one_query(api, make_session):
    first, second = make_session(status="pending"), make_session(status="pending")
    count, body = _queries(api, second)
    assert body["queue_position"] == 2 and _queries(api, first)[1]["queue_position"] == 1
    assert count == DETAIL_QUERIES  # no stages, so no executions to read; one query counts those ahead of it


def test_related_alerts_come_oldest_first_and_only_the_latest_repeats_newest_first(api, investigated):
    session = investigated()
    _grown(session, stages=0, executions=0, alerts=RECENT_OCCURRENCES + 5)
    body = _queries(api, session)[1]
    related = [a["fingerprint"] for a in body["related_alerts"]]
    repeats = [a["fingerprint"] for a in body["recent_occurrences"]]
    assert related == [f"fp-{n}" for n in range(RECENT_OCCURRENCES + 5)]
    assert repeats == [f"fp-{n}" for n in reversed(range(5, RECENT_OCCURRENCES + 5))]
    assert {a["kind"] for a in body["related_alerts"]} == {"related"}
