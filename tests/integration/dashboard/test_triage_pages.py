"""The Triage page and a session's triage panel, rendered by Django: columns with counts, filters from the URL
(bad values dropped with a note), escaping, and the actions the panel offers in each state."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db.models import F
from django.test import Client

from tarsy.models import AlertSession, SessionScore
from tarsy.services import sessions as session_service
from tarsy.services import triage
from tarsy.services.intake.alerts import session_submit

pytestmark = [pytest.mark.django_db]
EVIL = '<img src=x onerror="window.__xss=1">'


def _finished(pod: str, *, severity: str = "warning", title: str = "", score: int | None = None) -> AlertSession:
    session = session_submit(data=f"pod {pod} CrashLoopBackOff", alert_type="kubernetes",
                             author="alertmanager")
    AlertSession.all_objects.filter(id=session.id).update(severity=severity, status="in_progress",
                                                          started_at=F("created_at"), title=title or pod)
    if score is not None:
        SessionScore.objects.create(session_id=session.id, status="scored", score=score, support="supported")
    return session_service.session_set_status(session_id=session.id, status="completed",
                                              from_statuses=("in_progress",))


def _column(html: str, state: str) -> str:
    start = html.index(f'id="column-{state}"')
    end = html.find("</section>", start)
    return html[start:end]


@pytest.fixture
def board():
    waiting = _finished("web-1", severity="critical", title=f"web-1 down {EVIL}", score=40)
    mine = _finished("web-2", score=90)
    done = _finished("web-3", severity="info", score=95)
    triage.claim(session_id=mine.id, actor="alice")
    triage.resolve(session_id=done.id, actor="bob", resolution="false_positive", note="flapping probe")
    return waiting, mine, done


def test_the_triage_page_shows_three_columns_with_counts(board):
    waiting, mine, done = board
    calm = _finished("batch-1", severity="info")  # waiting as long, less severe: listed after the critical one
    html = Client(REMOTE_ADDR="127.0.0.1").get("/triage").content.decode()
    needs_review = _column(html, "needs_review")
    assert needs_review.index(str(waiting.id)) < needs_review.index(str(calm.id))
    assert str(mine.id) not in needs_review
    in_progress = _column(html, "in_progress")
    assert str(mine.id) in in_progress and "<strong>alice</strong>" in in_progress
    resolved = _column(html, "resolved")
    assert str(done.id) in resolved and "False positive" in resolved
    assert '<span class="count" data-count>2</span>' in needs_review
    assert '<span class="group-name">critical</span> <span class="count">1</span>' in needs_review  # by severity
    assert EVIL not in html and "&lt;img src=x" in html
    assert 'href="/triage" aria-current="page"' in html  # the nav link


def test_filters_narrow_every_column_and_bad_values_are_dropped_with_a_note(board):
    waiting, mine, done = board
    client = Client(REMOTE_ADDR="127.0.0.1")
    html = client.get("/triage?assignee=alice").content.decode()
    assert str(mine.id) in html and str(waiting.id) not in html and str(done.id) not in html
    html = client.get("/triage?severity=critical&chain_id=kubernetes").content.decode()
    assert str(waiting.id) in html and str(mine.id) not in html
    html = client.get("/triage?score_min=85&score_max=92").content.decode()
    assert str(mine.id) in html and str(done.id) not in html and str(waiting.id) not in html
    response = client.get("/triage?severity=loud&score_min=abc&fragment=board")
    assert response.status_code == 200 and str(waiting.id) in response.content.decode()
    page = client.get("/triage?severity=loud&score_min=abc").content.decode()
    assert "The severity filter was ignored" in page and "The score_min filter was ignored" in page


def test_the_session_panel_offers_the_actions_of_its_state_and_shows_the_log(board):
    waiting, mine, done = board
    get_user_model().objects.create_user("carol")
    client = Client(REMOTE_ADDR="127.0.0.1")
    html = client.get(f"/sessions/{waiting.id}").content.decode()
    assert 'id="triage-claim"' in html and 'id="triage-resolve-open"' in html and 'id="triage-reopen"' not in html
    assert '<option value="carol"' in html  # assignable users come from the user store
    assert 'name="triage_rating" value="accurate"' in html  # the accuracy review in the resolve dialog
    html = client.get(f"/sessions/{done.id}/fragments/triage").content.decode()
    assert 'id="triage-reopen"' in html and 'id="triage-claim"' not in html
    assert "flapping probe" in html and "False positive" in html and "<strong class=\"actor\">bob</strong>" in html
