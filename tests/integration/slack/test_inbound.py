"""Slack's requests: signature verification (bad, missing and stale signatures refused), the Events API
handshake, questions by thread mention and by slash command, and the cross-site guard's exemption of exactly
these endpoints."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client
from django.utils import timezone

from tarsy.models import ChatUserMessage, SlackPost, SlackThread
from tarsy.services import sessions
from tarsy.services.intake.alerts import session_submit
from tarsy.services.queue import session_claim
from tests.support.slack import mention_event, signed_headers, slack_section, slash_command

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]

EVENTS, COMMANDS = "/api/v1/slack/events", "/api/v1/slack/commands"
FORM = "application/x-www-form-urlencoded"
SCRIPT = {"KubernetesAgent": [{"text": "Final Answer: done"}]}


@pytest.fixture
def slack_on(scripted_config, fake_slack, slack_env):
    return scripted_config(SCRIPT, tarsy={"slack": slack_section(fake_slack.url, allow_unmapped=True)})


@pytest.fixture
def client():
    return Client(REMOTE_ADDR="203.0.113.7")  # Slack is not on loopback: auth mode none would refuse it


def _post_event(client, body: str, **headers):
    return client.post(EVENTS, body, content_type="application/json", **{**signed_headers(body), **headers})


def _session_in_thread(status: str, ts: str = "1700000000.000001"):
    session = session_submit(data="pod web-1 CrashLoopBackOff")
    session_claim(session=session, worker_id="w1", now=timezone.now())
    if status != "in_progress":
        sessions.session_set_status(session_id=session.id, status=status, from_statuses=("in_progress",),
                                    final_analysis="missing config map", executive_summary="Config map missing.")
    SlackThread.objects.filter(session=session).update(channel="CALERTS", ts=ts)
    return session


def test_the_url_verification_handshake_answers_the_challenge(slack_on, client):
    body = json.dumps({"type": "url_verification", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
                       "token": "unused"})
    response = _post_event(client, body)
    assert response.status_code == 200
    assert response.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}


@pytest.mark.parametrize("headers", [
    {},  # unsigned
    {"HTTP_X_SLACK_REQUEST_TIMESTAMP": str(int(time.time())), "HTTP_X_SLACK_SIGNATURE": "v0=" + "0" * 64},
    signed_headers('{"type": "url_verification", "challenge": "c"}', secret="another-apps-secret"),
    signed_headers('{"type": "url_verification", "challenge": "c"}', timestamp=int(time.time()) - 6 * 60),  # stale
])
def test_requests_not_signed_by_slack_now_are_refused(slack_on, client, headers):
    body = '{"type": "url_verification", "challenge": "c"}'
    response = client.post(EVENTS, body, content_type="application/json", **headers)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    command = client.post(COMMANDS, slash_command("ask x y"), content_type=FORM, **headers)
    assert command.status_code == 401


@pytest.mark.parametrize("timestamp", ["abc", "1e9", "9" * 400, "\u0661\u0667\u0660\u0660", " 1700000000", "-1",
                                       "1700000000.5"])
def test_a_malformed_timestamp_is_a_401_without_a_traceback(slack_on, client, caplog, timestamp):
    """Signed over the malformed timestamp, so only the timestamp itself can be the reason."""
    body = '{"type": "url_verification", "challenge": "c"}'
    headers = signed_headers(body, timestamp=timestamp)
    response = client.post(EVENTS, body, content_type="application/json", **headers)
    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized", "detail": "missing, invalid or stale Slack signature"}
    command = client.post(COMMANDS, slash_command("ask x y"), content_type=FORM,
                          **signed_headers(slash_command("ask x y"), timestamp=timestamp))
    assert command.status_code == 401
    assert not [record for record in caplog.records if record.levelname in ("ERROR", "CRITICAL")]


def test_a_question_mentioned_in_a_sessions_thread_becomes_a_chat_question(slack_on, client):
    session = _session_in_thread("completed")
    body = mention_event(channel="CALERTS", thread_ts="1700000000.000001",
                         text="<@U0TARSY> which config map is missing?")
    response = _post_event(client, body)
    assert response.status_code == 200, response.content
    message = ChatUserMessage.objects.get(chat__session=session)
    assert (message.content, message.author) == ("which config map is missing?", "slack:U0ALICE")


def test_a_question_on_a_running_session_is_answered_in_the_thread_with_the_reason(slack_on, client):
    session = _session_in_thread("in_progress")
    response = _post_event(client, mention_event(channel="CALERTS", thread_ts="1700000000.000001",
                                                 text="<@U0TARSY> why?"))
    assert response.status_code == 200
    assert not ChatUserMessage.objects.filter(chat__session=session).exists()
    notice = SlackPost.objects.get(thread_id=session.id, kind="notice")
    assert "cannot take this question now" in notice.text and "the session is in progress" in notice.text


def test_mentions_outside_tarsys_threads_and_other_events_are_ignored(slack_on, client):
    _session_in_thread("completed")
    for body in [mention_event(channel="CALERTS", thread_ts="1699999999.000009", text="<@U0TARSY> hi"),
                 mention_event(channel="COTHER", thread_ts="1700000000.000001", text="<@U0TARSY> hi"),
                 json.dumps({"type": "event_callback", "event": {"type": "reaction_added"}})]:
        assert _post_event(client, body).status_code == 200
    assert not ChatUserMessage.objects.exists() and not SlackPost.objects.filter(kind="notice").exists()


def test_a_retry_after_a_slow_answer_is_not_asked_twice(slack_on, client):
    session = _session_in_thread("completed")
    body = mention_event(channel="CALERTS", thread_ts="1700000000.000001", text="<@U0TARSY> which one?")
    assert _post_event(client, body).status_code == 200
    retry = _post_event(client, body, HTTP_X_SLACK_RETRY_NUM="1", HTTP_X_SLACK_RETRY_REASON="http_timeout")
    assert retry.status_code == 200
    assert ChatUserMessage.objects.filter(chat__session=session).count() == 1
    assert not SlackPost.objects.filter(kind="notice").exists()


def test_bad_bodies_are_clear_4xx(slack_on, client):
    for body in ["not json", "[1, 2]"]:
        response = _post_event(client, body)
        assert response.status_code == 400 and response.json()["error"] == "bad_request"
    assert client.get(EVENTS).status_code == 405


def test_the_slash_command_asks_a_session_and_answers_only_the_asker(slack_on, client):
    session = _session_in_thread("completed")
    body = slash_command(f"ask https://tarsy.example.com/sessions/{session.id} what changed before the crash?")
    # Form-encoded, with an Origin: refused elsewhere under /api/, taken here on the strength of the signature.
    response = client.post(COMMANDS, body, content_type=FORM, HTTP_ORIGIN="https://evil.example",
                           **signed_headers(body))
    assert response.status_code == 200, response.content
    assert response.json()["response_type"] == "ephemeral" and "Question taken" in response.json()["text"]
    message = ChatUserMessage.objects.get(chat__session=session)
    assert (message.content, message.author) == ("what changed before the crash?", "slack:alice")  # its handle
    busy = slash_command(f"ask {session.id} and then?")
    refused = client.post(COMMANDS, busy, content_type=FORM, **signed_headers(busy)).json()
    assert "cannot take this question now" in refused["text"]
    for text in ["", "help", "ask", f"ask {session.id}", "ask not-a-session why?"]:
        body = slash_command(text)
        usage = client.post(COMMANDS, body, content_type=FORM, **signed_headers(body))
        assert usage.status_code == 200 and "Usage" in usage.json()["text"]


def test_the_exemption_is_exactly_the_slack_endpoints(slack_on, client):
    session = _session_in_thread("completed")
    other = client.post(f"/api/v1/sessions/{session.id}/chat/messages", "content=hi", content_type=FORM)
    assert other.status_code == 415


def test_without_slack_configured_the_endpoints_do_not_exist(scripted_config, client, slack_env):
    scripted_config(SCRIPT)
    body = '{"type": "url_verification", "challenge": "c"}'
    response = _post_event(client, body)
    assert response.status_code == 404 and response.json()["detail"] == "Slack is not configured"
