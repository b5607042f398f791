"""The dashboard and the API read through one read side: the same query lists the same sessions in the same
order, the filter options are the same, and a page and a REST answer give the same catch-up cursor."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from tarsy.models import AlertSession, SessionCounters, TimelineEvent
from tarsy.selectors.filters import SessionFilter
from tarsy.selectors.sessions import sessions_list
from tarsy.services import timeline
from tarsy.services.intake.alerts import session_submit

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

ROW = re.compile(r'<tr data-session-id="([0-9a-f-]{36})"')


def _session(data: str, *, days_ago: float, status: str, author: str, alert_type: str = "kubernetes",
             duration_s: float | None = 60, tokens: int = 0, **fields) -> AlertSession:
    session = session_submit(data=data, alert_type=None, author=author)
    created = timezone.now() - timedelta(days=days_ago)
    started = created + timedelta(seconds=5) if status != "pending" else None
    completed = started + timedelta(seconds=duration_s) if started and duration_s is not None else None
    AlertSession.all_objects.filter(id=session.id).update(
        created_at=created, started_at=started, completed_at=completed, status=status, alert_type=alert_type,
        **fields)
    SessionCounters.objects.filter(session_id=session.id).update(total_tokens=tokens)
    return AlertSession.all_objects.get(id=session.id)


@pytest.fixture
def sessions():
    rows = [
        _session("disk full on db-1", days_ago=3, status="completed", author="alice", alert_type="database",
                 duration_s=30, tokens=500, final_analysis="The WAL volume filled up.",
                 executive_summary="Disk full."),
        _session("pod web-1 OOMKilled", days_ago=1.5, status="failed", author="bob", duration_s=300, tokens=90),
        _session("latency spike", days_ago=0.2, status="in_progress", author="carol", duration_s=None,
                 tokens=1200),
        _session("queue backlog", days_ago=0.1, status="pending", author="alice", duration_s=None),
        _session("node disk pressure", days_ago=10, status="completed", author="dave", duration_s=45, tokens=30,
                 chain_id="other-chain"),
    ]
    TimelineEvent.objects.create(session=rows[2], sequence_number=1, event_type="llm_thinking",
                                 content="The ingress controller restarted at noon")
    return rows


def _api_ids(query: str) -> list[str]:
    response = Client(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/sessions?{query}&page_size=100")
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def _page_ids(query: str) -> list[str]:
    response = Client(REMOTE_ADDR="127.0.0.1").get(f"/?{query}&page_size=100&fragment=history")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'role="note"' not in html, html  # nothing was dropped: the page applied the whole query
    return ROW.findall(html)


QUERIES = [
    "",
    "search=volume",  # a word of the final analysis (full text)
    "search=" + quote("ingress controller"),  # timeline content
    "search=web-1",  # alert data
    "search=" + quote("disk or OOMKilled"),  # websearch syntax: either word
    "status=completed&status=failed",
    "status=failed,in_progress",
    "alert_type=database",
    "chain_id=kubernetes",
    "author=alice",
    "created_within=24h",
    "ordering=-duration",
    "ordering=total_tokens",
    "ordering=author",
    "status=completed&author=alice&search=disk",
]


@pytest.mark.services  # PostgreSQL full-text search
@pytest.mark.parametrize("query", QUERIES)
def test_the_page_and_the_api_list_the_same_sessions_in_the_same_order(sessions, query):
    assert connection.vendor == "postgresql"
    listed = _api_ids(query)
    assert _page_ids(query) == listed


@pytest.mark.parametrize("bounds, expected", [
    ({"start_date": 1}, [3, 2, 1]),  # a date alone: from the start of that day
    ({"end_date": 1}, [1, 0, 4]),  # ... and to its end
    ({"start_date": 0, "end_date": 1}, [1, 0]),
], ids=["start-day", "end-day", "range"])
def test_date_bounds_mean_the_same_on_both(sessions, bounds, expected):
    """Each bound is the day a session was created on (the sessions are over a day apart)."""
    query = "&".join(f"{name}={timezone.localtime(sessions[i].created_at).date().isoformat()}"
                     for name, i in bounds.items())
    assert _api_ids(query) == _page_ids(query) == [str(sessions[i].id) for i in expected]


def test_a_date_and_time_bound_means_the_same_on_both(sessions):
    query = "start_date=" + quote((sessions[1].created_at - timedelta(seconds=1)).isoformat())
    assert _api_ids(query) == _page_ids(query) == [str(sessions[i].id) for i in (3, 2, 1)]


@pytest.mark.services  # PostgreSQL full-text search
def test_search_is_full_text_on_both(sessions):
    either = "search=" + quote("disk or OOMKilled")
    assert set(_page_ids(either)) == {str(sessions[i].id) for i in (0, 1, 4)}


@pytest.mark.services  # PostgreSQL full-text search
@pytest.mark.parametrize("term, found", [("ingress", 2), ("volume", 0)], ids=["timeline", "session"])
def test_the_search_reads_the_stored_vectors_through_their_indexes(sessions, term, found):
    """Planned with sequential scans off (with five sessions the planner would rightly scan): both indexes are
    usable by the query the search builds."""
    query = SessionFilter({"search": term}, queryset=sessions_list()).qs
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "tarsy_timelineevent_search" in plan
    assert [s.id for s in query] == [sessions[found].id]


def test_a_stored_vector_follows_its_text(sessions):
    TimelineEvent.objects.filter(session=sessions[2]).update(content="now about certificates")
    assert _api_ids("search=ingress") == []
    assert _api_ids("search=certificates") == [str(sessions[2].id)]


def test_filter_options_are_the_same_on_both(sessions):
    client = Client(REMOTE_ADDR="127.0.0.1")
    api = client.get("/api/v1/sessions/filter-options").json()
    page = client.get("/")
    assert page.context["options"] == api
    html = page.content.decode()
    assert set(api["chain_ids"]) >= {"kubernetes", "other-chain"}
    for chain in api["chain_ids"]:
        assert f'<option value="{chain}"' in html


def test_the_active_panel_and_the_api_list_the_same_running_and_queued_sessions(sessions):
    client = Client(REMOTE_ADDR="127.0.0.1")
    api = client.get("/api/v1/sessions/active").json()
    html = client.get("/?fragment=active").content.decode()
    assert [s["id"] for s in api["active"]] == [str(sessions[2].id)]
    assert [(s["id"], s["queue_position"]) for s in api["queued"]] == [(str(sessions[3].id), 1)]
    running, queued = html.split('id="queued-panel"')
    assert str(sessions[2].id) in running and str(sessions[3].id) in queued and "#1 in queue" in queued


def test_one_event_cursor_for_pages_and_rest(sessions):
    session = sessions[2]
    for n in range(3):
        timeline.timeline_event_create(session_id=session.id, event_type="llm_response", content=f"step {n}")
    client = Client(REMOTE_ADDR="127.0.0.1")
    page = client.get(f"/sessions/{session.id}").content.decode()
    cursor = int(re.search(r'id="session-page"[^>]*data-cursor="(\d+)"', page).group(1))
    assert cursor > 0
    assert client.get(f"/api/v1/sessions/{session.id}").json()["last_event_id"] == cursor
    assert client.get(f"/api/v1/sessions/{session.id}/timeline").json()["last_event_id"] == cursor
