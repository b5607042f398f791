"""Absolute session links in the API: from `system.external_url`, else from the request's own host."""

from __future__ import annotations

import pytest

from tarsy.links import session_url
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def external(tmp_path):
    write_config(tmp_path, tarsy={"system": {"external_url": "https://tarsy.example.com/sre/"}})


def test_accepted_alert_links_to_its_session_page(api, external):
    body = api.post("/api/v1/alerts", {"data": "disk full on db-1"}, format="json").json()
    assert body["session_url"] == f"https://tarsy.example.com/sre/sessions/{body['session_id']}"


def test_detail_list_and_active_sessions_carry_the_link(api, external, make_session):
    session = make_session(status="pending")
    expected = f"https://tarsy.example.com/sre/sessions/{session.id}"
    assert api.get(f"/api/v1/sessions/{session.id}").json()["session_url"] == expected
    assert [row["session_url"] for row in api.get("/api/v1/sessions").json()["results"]] == [expected]
    assert [row["session_url"] for row in api.get("/api/v1/sessions/active").json()["queued"]] == [expected]


def test_without_an_external_url_the_link_uses_the_request_host(api, make_session, settings):
    settings.ALLOWED_HOSTS = ["tarsy.internal"]
    session = make_session()
    body = api.get(f"/api/v1/sessions/{session.id}", HTTP_HOST="tarsy.internal:8000").json()
    assert body["session_url"] == f"http://tarsy.internal:8000/sessions/{session.id}"


def test_links_built_outside_a_request_are_absolute_with_an_external_url(external, make_session):
    session = make_session()
    assert session_url(session.id) == f"https://tarsy.example.com/sre/sessions/{session.id}"
