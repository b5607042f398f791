"""GET /api/v1/sessions (filters, search, ordering, pagination), /active and /filter-options."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tarsy.models import AlertSession, TimelineEvent

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


@pytest.fixture
def three(make_session):
    a = make_session("disk full on db-1", status="completed", author="alice", duration_s=30,
                     executive_summary="Disk full. " * 40, final_analysis="The WAL volume filled up.")
    b = make_session("pod web-1 OOMKilled", status="failed", author="bob", duration_s=300)
    c = make_session("latency spike", status="in_progress", author="carol")
    return a, b, c


def test_list_returns_newest_first_with_summary_preview(api, three):
    a, b, c = three
    body = api.get("/api/v1/sessions").json()
    assert [r["id"] for r in body["results"]] == [str(c.id), str(b.id), str(a.id)]
    assert (body["count"], body["page"], body["page_size"], body["total_pages"]) == (3, 1, 25, 1)
    preview = body["results"][2]["executive_summary_preview"]
    assert preview.startswith("Disk full.") and preview.endswith("…") and len(preview) <= 240
    assert "alert_data" not in body["results"][0]


def test_status_filter_takes_several_values(api, three):
    a, b, c = three
    assert set(ids(api.get("/api/v1/sessions?status=completed&status=failed"))) == {str(a.id), str(b.id)}
    assert set(ids(api.get("/api/v1/sessions?status=failed,in_progress"))) == {str(b.id), str(c.id)}


def test_unknown_status_is_a_400_with_reason(api, three):
    response = api.get("/api/v1/sessions?status=done")
    assert response.status_code == 400
    assert "status" in response.json()["detail"]


def test_author_alert_type_and_chain_filters(api, three):
    a, _, _ = three
    assert ids(api.get("/api/v1/sessions?author=alice")) == [str(a.id)]
    assert len(ids(api.get("/api/v1/sessions?alert_type=kubernetes&chain_id=kubernetes"))) == 3
    assert ids(api.get("/api/v1/sessions?alert_type=other")) == []


def test_search_covers_alert_data_final_analysis_and_timeline(api, three):
    a, b, c = three
    TimelineEvent.objects.create(session=c, sequence_number=1, event_type="llm_thinking",
                                 content="The ingress controller restarted at noon")
    assert ids(api.get("/api/v1/sessions?search=OOMKilled")) == [str(b.id)]
    assert ids(api.get("/api/v1/sessions?search=volume")) == [str(a.id)]  # final analysis, full-text word
    assert ids(api.get("/api/v1/sessions?search=ingress controller")) == [str(c.id)]  # timeline content
    assert ids(api.get("/api/v1/sessions?search=web-1")) == [str(b.id)]


def test_search_shorter_than_three_characters_is_refused(api, three):
    response = api.get("/api/v1/sessions?search=db")
    assert response.status_code == 400
    assert "search" in response.json()["detail"]


def test_date_range_filters_on_creation_time(api, three):
    a, b, c = three
    AlertSession.objects.filter(id=a.id).update(created_at=timezone.now() - timedelta(days=3))
    since = (timezone.now() - timedelta(days=1)).isoformat()
    assert set(ids(api.get("/api/v1/sessions", {"start_date": since}))) == {str(b.id), str(c.id)}
    until = (timezone.now() - timedelta(days=2)).isoformat()
    assert ids(api.get("/api/v1/sessions", {"end_date": until})) == [str(a.id)]


@pytest.mark.parametrize("query, field", [("start_date=yesterday", "start_date"),
                                          ("start_date=0136-04-23T23:50:11%2B16:33", None),  # PostgreSQL's limit
                                          ("end_date=0001-01-01T00:00:00%2B01:00", "end_date"),
                                          ("start_date=2030-01-02T00:00:00Z&end_date=2030-01-01T00:00:00Z",
                                           "end_date")])
def test_odd_dates_are_400_with_reason_never_500(api, three, query, field):
    response = api.get(f"/api/v1/sessions?{query}")
    if field is None:  # an offset PostgreSQL would refuse is normalised to UTC, not a 500
        assert response.status_code == 200
        return
    assert response.status_code == 400
    assert field in response.json()["detail"]


def test_ordering_by_each_supported_key(api, three):
    a, b, c = three
    assert ids(api.get("/api/v1/sessions?ordering=author")) == [str(a.id), str(b.id), str(c.id)]
    assert ids(api.get("/api/v1/sessions?ordering=-author")) == [str(c.id), str(b.id), str(a.id)]
    assert ids(api.get("/api/v1/sessions?ordering=status")) == [str(a.id), str(b.id), str(c.id)]
    assert ids(api.get("/api/v1/sessions?ordering=created_at"))[0] == str(a.id)
    assert ids(api.get("/api/v1/sessions?ordering=duration"))[:2] == [str(a.id), str(b.id)]
    assert len(ids(api.get("/api/v1/sessions?ordering=alert_type"))) == 3


def test_unknown_ordering_is_a_400(api, three):
    response = api.get("/api/v1/sessions?ordering=password")
    assert response.status_code == 400
    assert "ordering" in response.json()["detail"]


def test_pagination_defaults_to_25_and_caps_page_size_at_100(api, make_session):
    for n in range(27):
        make_session(f"alert number {n}")
    first = api.get("/api/v1/sessions").json()
    assert (len(first["results"]), first["count"], first["total_pages"]) == (25, 27, 2)
    second = api.get("/api/v1/sessions?page=2").json()
    assert len(second["results"]) == 2
    assert not {r["id"] for r in first["results"]} & {r["id"] for r in second["results"]}
    assert len(api.get("/api/v1/sessions?page_size=100").json()["results"]) == 27
    for bad in ("page_size=101", "page_size=0", "page_size=ten", "page=0", "page=x"):
        response = api.get(f"/api/v1/sessions?{bad}")
        assert response.status_code == 400, bad
        assert bad.split("=")[0] in response.json()["detail"]
    beyond = api.get("/api/v1/sessions?page=9")
    assert beyond.status_code == 404 and beyond.json()["error"] == "not_found"


def test_soft_deleted_sessions_are_not_listed(api, three):
    a, _, _ = three
    assert api.delete(f"/api/v1/sessions/{a.id}").status_code == 204
    assert str(a.id) not in ids(api.get("/api/v1/sessions"))


def test_active_lists_running_and_queued_with_positions(api, make_session):
    running = make_session("running one", status="in_progress")
    first = make_session("queued first", status="pending")
    second = make_session("queued second", status="pending")
    make_session("done", status="completed")
    body = api.get("/api/v1/sessions/active").json()
    assert [s["id"] for s in body["active"]] == [str(running.id)]
    assert [(s["id"], s["queue_position"]) for s in body["queued"]] == [(str(first.id), 1), (str(second.id), 2)]


def test_filter_options_list_values_present_and_configured(api, three):
    body = api.get("/api/v1/sessions/filter-options").json()
    assert body["authors"] == ["alice", "bob", "carol"]
    assert "kubernetes" in body["alert_types"] and "kubernetes" in body["chain_ids"]
    assert "timed_out" in body["statuses"]
    assert "-duration" in body["ordering"]
