"""Session search has a bounded cost on both databases: a term of at most 200 characters, a substring match
that does not backtrack, and on PostgreSQL a statement timeout of its own."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


@pytest.mark.parametrize("length", [201, 4_000, 60_000])
def test_search_longer_than_200_characters_is_refused(api, make_session, length):
    """A substring search costs stored text × term length: a long term is a 400 before any query runs."""
    make_session("a" * 100_000)
    response = api.get("/api/v1/sessions", {"search": "a" * (length - 1) + "b"})
    assert response.status_code == 400
    assert response.json()["detail"]["search"] == [f"Ensure this value has at most 200 characters (it has {length})."]


def test_search_finds_a_term_of_200_characters_case_insensitively(api, make_session):
    term = "Disk Full " * 20
    a = make_session("x" * 500_000 + term.upper() + "y" * 10)
    make_session("x" * 500_000)
    assert ids(api.get("/api/v1/sessions", {"search": term})) == [str(a.id)]


def test_a_search_past_its_time_limit_is_a_400_and_the_dashboard_says_so(api, make_session, settings):
    """PostgreSQL: a search runs under its own statement timeout (1 ms here; a 1 MB alert's text vector takes
    far longer), then the connection serves the next request with its usual limit."""
    if connection.vendor != "postgresql":
        pytest.skip("the search time limit is PostgreSQL's statement_timeout")
    make_session(" ".join(f"word{n}" for n in range(100_000)))
    settings.TARSY_SEARCH_TIMEOUT_MS = 1
    response = api.get("/api/v1/sessions", {"search": "pod crash"})
    assert response.status_code == 400
    assert response.json()["error"] == ("The search ran past its 0.001 s limit and was stopped; search for a more "
                                        "distinctive term.")
    page = Client(REMOTE_ADDR="127.0.0.1").get("/", {"search": "pod crash"}).content.decode()
    assert "The search ran past its 0.001 s limit and was stopped" in page and "The search filter was ignored" in page
    assert page.count("<tr data-session-id=") == 1
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "30s"


@pytest.mark.parametrize("fragment", [{}, {"fragment": "history"}], ids=["page", "fragment"])
def test_the_dashboard_ignores_a_search_over_200_characters_and_says_so(make_session, fragment):
    make_session()
    response = Client(REMOTE_ADDR="127.0.0.1").get("/", {"search": "ab" * 30_000, **fragment})
    assert response.status_code == 200
    assert ("The search filter was ignored: Ensure this value has at most 200 characters (it has 60000)."
            in response.content.decode())
