"""Django admin: an on-call engineer can find sessions by filter and search and drill into them."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from tarsy.models import AgentExecution, AlertSession, Message, Stage, TimelineEvent

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_superuser("oncall", "", "pw")
    client.force_login(user)
    return client


@pytest.fixture
def sessions():
    failed = AlertSession.objects.create(alert_data="pod web-1 CrashLoopBackOff", alert_type="kubernetes",
                                         chain_id="kubernetes", status="failed", author="alice")
    done = AlertSession.objects.create(alert_data="disk full on node-3", alert_type="node", chain_id="node",
                                       status="completed", author="bob", final_analysis="node-3 disk is full",
                                       executive_summary="Disk pressure on node-3.")
    stage = Stage.objects.create(session=done, name="analysis", index=0, status="completed")
    execution = AgentExecution.objects.create(stage=stage, session=done, agent_name="KubernetesAgent",
                                              iteration_strategy="react", status="completed")
    TimelineEvent.objects.create(session=done, stage=stage, execution=execution, sequence_number=1,
                                 event_type="final_analysis", content="node-3 disk is full")
    Message.objects.create(session=done, execution=execution, sequence_number=1, role="system", content="sys")
    return failed, done, execution


def test_session_list_filters_and_search(admin_client, sessions):
    failed, done, _ = sessions
    page = admin_client.get("/admin/tarsy/alertsession/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "By status" in body and "By alert type" in body and "By chain id" in body
    by_status = admin_client.get("/admin/tarsy/alertsession/?status__exact=failed").content.decode()
    assert str(failed.id)[:8] in by_status and str(done.id)[:8] not in by_status
    by_search = admin_client.get("/admin/tarsy/alertsession/?q=disk").content.decode()
    assert str(done.id)[:8] in by_search and str(failed.id)[:8] not in by_search
    by_author = admin_client.get("/admin/tarsy/alertsession/?q=alice").content.decode()
    assert str(failed.id)[:8] in by_author


def test_session_page_inlines_stages_and_execution_page_inlines_timeline_and_messages(admin_client, sessions):
    _, done, execution = sessions
    session_page = admin_client.get(f"/admin/tarsy/alertsession/{done.id}/change/").content.decode()
    assert "analysis" in session_page and "Disk pressure on node-3." in session_page
    execution_page = admin_client.get(f"/admin/tarsy/agentexecution/{execution.id}/change/").content.decode()
    assert "node-3 disk is full" in execution_page  # timeline inline
    assert "final_analysis" in execution_page and "system" in execution_page  # message inline
    assert f"/admin/tarsy/alertsession/{done.id}/change/" in execution_page  # link back to the session


def test_admin_is_staff_only(client, sessions):
    response = client.get("/admin/tarsy/alertsession/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_admin_login_is_throttled_per_username_and_address():
    get_user_model().objects.create_superuser("oncall", "", "the-right-password")
    attacker = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        page = attacker.post("/admin/login/", {"username": "oncall", "password": "a-guess"})
        assert page.status_code == 200 and "correct username and password" in page.content.decode()
    assert attacker.post("/admin/login/", {"username": "oncall", "password": "a-guess"}).status_code == 429
    locked = attacker.post("/admin/login/", {"username": "oncall", "password": "the-right-password"})
    assert locked.status_code == 429 and "too many login attempts" in locked.content.decode()
    assert "_auth_user_id" not in attacker.session
    # Another address is not locked out with it, so a guesser cannot lock the on-call engineer out everywhere.
    elsewhere = Client(REMOTE_ADDR="198.51.100.4")
    assert elsewhere.post("/admin/login/", {"username": "oncall", "password": "the-right-password"}).status_code == 302
    assert elsewhere.get("/admin/tarsy/alertsession/").status_code == 200


def test_score_and_review_show_in_the_session_list_and_page(admin_client, sessions):
    from tarsy.models import SessionReview, SessionScore

    failed, done, _ = sessions
    SessionScore.objects.create(session=done, status="scored", score=72, support="supported", tags=["uncited_claim"],
                                rationale="Follows from the disk usage.")
    SessionReview.objects.create(session=done, rating="partially_accurate", author="carol", feedback="close")
    page = admin_client.get("/admin/tarsy/alertsession/").content.decode()
    assert "72 (supported) uncited_claim" in page and "partially_accurate by carol" in page
    filtered = admin_client.get("/admin/tarsy/alertsession/?review__rating__exact=partially_accurate").content.decode()
    assert str(done.id)[:8] in filtered and str(failed.id)[:8] not in filtered
    detail = admin_client.get(f"/admin/tarsy/alertsession/{done.id}/change/").content.decode()
    assert "Follows from the disk usage." in detail and "carol" in detail
    assert admin_client.get("/admin/tarsy/sessionscore/").status_code == 200
    assert admin_client.get("/admin/tarsy/sessionreview/").status_code == 200


def test_the_triage_log_shows_on_the_session_page_and_filters_the_list(admin_client, sessions):
    from tarsy.services import triage

    failed, done, _ = sessions
    triage.resolve(session_id=done.id, actor="dave", resolution="false_positive", note="disk was a test fill")
    detail = admin_client.get(f"/admin/tarsy/alertsession/{done.id}/change/").content.decode()
    assert "disk was a test fill" in detail and "dave" in detail
    filtered = admin_client.get("/admin/tarsy/alertsession/?triage_status=resolved").content.decode()
    assert str(done.id)[:8] in filtered and str(failed.id)[:8] not in filtered


def test_session_list_shows_each_sessions_title_and_finds_by_it(admin_client):
    titled = AlertSession.objects.create(alert_data="{}", alert_type="kubernetes", chain_id="kubernetes",
                                         status="completed", title="KubePodCrashLooping in payments")
    body = admin_client.get("/admin/tarsy/alertsession/").content.decode()
    assert "column-title" in body and "KubePodCrashLooping in payments" in body
    found = admin_client.get("/admin/tarsy/alertsession/?q=payments").content.decode()
    assert str(titled.id)[:8] in found


def test_the_admin_index_names_memories_in_english(admin_client):
    body = admin_client.get("/admin/").content.decode()
    assert "Memories" in body and "Memorys" not in body
