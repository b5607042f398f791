"""The quality parts of the dashboard (Django test client): the session panel, the list's score and review
columns and filters, and the quality page's server-rendered charts — with untrusted text escaped."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tarsy.models import AgentExecution, AlertSession, SessionReview, SessionScore, Stage
from tests.support.configdir import scripted_provider, write_config

pytestmark = [pytest.mark.django_db]

EVIL = '<script>window.__xss=1</script>'


def _session(status="completed", chain="kubernetes", agent="KubernetesAgent", provider="scripted") -> AlertSession:
    session = AlertSession.objects.create(alert_data="pod web-1", alert_type="kubernetes", chain_id=chain,
                                          status=status, final_analysis="missing config map")
    stage = Stage.objects.create(session=session, name="analysis", index=0, status="completed")
    AgentExecution.objects.create(stage=stage, session=session, agent_name=agent, agent_config_name=agent,
                                  iteration_strategy="react", status="completed", llm_provider=provider)
    return session


def _score(session, value, support, tags=(), status="scored", error=""):
    return SessionScore.objects.create(session=session, status=status, score=value, support=support,
                                       rationale=f"Rationale {EVIL}", tags=list(tags), provider="scorer", error=error)


def test_the_session_panel_shows_score_tags_and_offers_a_review():
    session = _session()
    _score(session, 42, "partly", ["red_herring"])
    html = Client(REMOTE_ADDR="127.0.0.1").get(f"/sessions/{session.id}").content.decode()
    assert 'id="score-value"' in html and ">42<" in html
    assert "red_herring" in html and 'id="review-form"' in html
    assert "Not reviewed yet." in html
    assert EVIL not in html and "&lt;script&gt;" in html


def test_a_failed_score_says_why_and_a_running_session_has_no_panel(config_dir):
    write_config(config_dir, tarsy={"scoring": {"llm_provider": "scorer"}},
                 providers={"scorer": scripted_provider({"scoring": [{"text": "{}"}]})})
    session = _session()
    _score(session, None, "", status="failed", error="the scorer's reply holds no JSON verdict")
    client = Client(REMOTE_ADDR="127.0.0.1")
    html = client.get(f"/sessions/{session.id}/fragments/quality").content.decode()
    assert "Scoring failed: the scorer&#x27;s reply holds no JSON verdict" in html
    assert 'id="rescore"' in html
    running = _session(status="in_progress")
    assert 'id="quality-panel"' not in client.get(f"/sessions/{running.id}").content.decode()


def test_the_list_shows_score_and_review_and_filters_by_them():
    good, bad, open_ = _session(), _session(), _session()
    _score(good, 88, "supported")
    _score(bad, 12, "unsupported", ["ignored_evidence"])
    SessionReview.objects.create(session=bad, rating="inaccurate", author="alice")
    client = Client(REMOTE_ADDR="127.0.0.1")

    def rows(query=""):
        html = client.get(f"/?{query}").content.decode()
        return set(re.findall(r'<tr data-session-id="([0-9a-f-]+)"', html)), html

    ids, html = rows()
    assert len(ids) == 3 and 'class="score-chip band-supported"' in html and "Inaccurate" in html
    assert rows("review=needs_review")[0] == {str(good.id), str(open_.id)}
    assert rows("rating=inaccurate")[0] == {str(bad.id)}
    assert rows("tag=ignored_evidence")[0] == {str(bad.id)}
    assert rows("support=supported")[0] == {str(good.id)}
    ids, html = rows("tag=nonsense")
    assert len(ids) == 3 and "The tag filter was ignored" in html


def test_the_quality_page_draws_distributions_and_agreement():
    sessions = [_session(), _session(), _session(chain=f"payments{EVIL}", agent="PaymentsAgent", provider="gpt")]
    _score(sessions[0], 91, "supported")
    _score(sessions[1], 30, "unsupported", ["red_herring"])
    _score(sessions[2], 50, "partly")
    SessionReview.objects.create(session=sessions[0], rating="accurate", author="alice")
    SessionReview.objects.create(session=sessions[1], rating="accurate", author="bob")
    response = Client(REMOTE_ADDR="127.0.0.1").get("/quality")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("<svg") >= 8  # histogram, trend, and two charts per chain, agent and provider
    assert "PaymentsAgent" in html and "gpt" in html
    assert EVIL not in html
    assert re.search(r'id="kpi-agreement">50%', html)
    assert 'id="kpi-sessions">3<' in html
    assert "red_herring" in html
    assert "cdn" not in html.lower()


def test_the_scoring_call_shows_in_the_trace_view():
    from tarsy.models import LLMInteraction

    session = _session()
    LLMInteraction.objects.create(session=session, execution=None, iteration=0, interaction_type="scoring",
                                  provider="scorer", model="judge-1", conversation=[
                                      {"role": "system", "content": "You review the final analysis"},
                                      {"role": "assistant", "content": '{"score": 70}'}])
    response = Client(REMOTE_ADDR="127.0.0.1").get(f"/sessions/{session.id}/trace")
    assert response.status_code == 200
    html = response.content.decode()
    assert "scoring" in html and "judge-1" in html and "You review the final analysis" in html
