"""Triage from Slack, against the wire-level fake Slack Web API: the buttons on a finished session's message and
`/tarsy claim|ack|resolve|reopen`, signed like Slack signs them; who acted (mapped to a TARSy identity); the
thread reply and the updated buttons; conflicts answered ephemerally; bad requests refused with clear 4xx."""

from __future__ import annotations

import json
import threading
import uuid
from urllib.parse import parse_qs, urlencode

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.utils import timezone

from tarsy.models import AlertSession, TriageActivity
from tarsy.services import sessions
from tarsy.services.intake.alerts import session_submit
from tarsy.services.queue import session_claim
from tarsy.slack.delivery import deliver
from tests.support.slack import block_action, blocks_text, signed_headers, slack_section, slash_command

pytestmark = [pytest.mark.timeout(60)]

INTERACTIONS, COMMANDS = "/api/v1/slack/interactions", "/api/v1/slack/commands"
FORM = "application/x-www-form-urlencoded"
SCRIPT = {"KubernetesAgent": [{"text": "Final Answer: done"}]}


@pytest.fixture
def slack_on(scripted_config, fake_slack, slack_env):
    def make(**slack):
        slack = {"allow_unmapped": True, **slack}  # members with no TARSy user act as slack:<handle> here
        return scripted_config(SCRIPT, tarsy={"system": {"external_url": "https://tarsy.example.com/"},
                                              "slack": slack_section(fake_slack.url, **slack)})
    make()
    fake_slack.add_member("U0ALICE", "alice", "Alice@Example.com")
    fake_slack.add_member("U0BOB", "bob.smith")  # no email shared with the app
    return make


@pytest.fixture
def client():
    return Client(REMOTE_ADDR="203.0.113.7")  # Slack is not on loopback




def _finished_in_slack(fake_slack) -> tuple[AlertSession, str]:
    """A completed session (needs review) whose message and summary are in Slack; returns it and the message ts."""
    session = session_submit(data="pod web-1 CrashLoopBackOff", severity="critical")
    assert session_claim(session=session, worker_id="w1", now=timezone.now())
    sessions.session_set_status(session_id=session.id, status="completed", from_statuses=("in_progress",),
                                final_analysis="missing config map", executive_summary="Config map missing.")
    assert deliver(session_id=session.id) is None
    [root] = [m for m in fake_slack.top_level() if f"Session `{session.id}`" in blocks_text(m.blocks)]
    return session, root.ts


def _triage_block(message) -> dict:
    [block] = [b for b in message.blocks if str(b.get("block_id", "")).startswith("triage:")]
    return block


def _click(client, body: str):
    return client.post(INTERACTIONS, body, content_type=FORM, **signed_headers(body))


def _command(client, text: str, **kwargs):
    body = slash_command(text, **kwargs)
    return client.post(COMMANDS, body, content_type=FORM, **signed_headers(body))


@pytest.mark.django_db
def test_a_signed_claim_click_makes_the_member_the_assignee_and_the_thread_says_so(slack_on, fake_slack, client):
    get_user_model().objects.create_user("alice", email="alice@example.com")  # who Alice signs in as
    session, ts = _finished_in_slack(fake_slack)
    block = _triage_block(fake_slack.messages[ts])
    assert block["block_id"] == f"triage:{session.id}"
    assert [e["action_id"] for e in block["elements"]] == ["triage_claim", "triage_acknowledge", "triage_resolve"]
    assert [o["value"] for o in block["elements"][2]["options"]] == ["actioned", "dismissed", "duplicate",
                                                                     "false_positive"]

    response = _click(client, block_action(action_id="triage_claim", block_id=block["block_id"], message_ts=ts))
    assert response.status_code == 200, response.content
    session.refresh_from_db()
    assert (session.triage_status, session.assignee) == ("in_progress", "alice")
    [entry] = TriageActivity.objects.filter(session=session)
    assert (entry.actor, entry.action, entry.from_status, entry.to_status) == ("alice", "claim", "needs_review",
                                                                               "in_progress")

    deliver(session_id=session.id)
    assert "Claimed by alice" in blocks_text(fake_slack.replies(ts)[-1].blocks)
    message = fake_slack.messages[ts]  # updated in place: the claim is shown and no longer offered
    assert "In progress* · alice" in blocks_text(message.blocks)
    assert [e["action_id"] for e in _triage_block(message)["elements"]] == ["triage_acknowledge", "triage_resolve"]

    pick = block_action(action_id="triage_resolve", block_id=block["block_id"], message_ts=ts, selected="actioned")
    assert _click(client, pick).status_code == 200
    session.refresh_from_db()
    assert (session.triage_status, session.resolution, session.assignee) == ("resolved", "actioned", "alice")
    deliver(session_id=session.id)
    assert "Resolved as actioned by alice" in blocks_text(fake_slack.replies(ts)[-1].blocks)
    assert [e["action_id"] for e in _triage_block(fake_slack.messages[ts])["elements"]] == ["triage_reopen"]


@pytest.mark.django_db
def test_a_member_is_the_configured_identity_or_the_user_with_their_email_else_their_handle(slack_on, fake_slack,
                                                                                           client):
    get_user_model().objects.create_user("alice", email="alice@example.com")
    session, ts = _finished_in_slack(fake_slack)

    def click(action_id: str, user: str, name: str) -> str:
        body = block_action(action_id=action_id, block_id=f"triage:{session.id}", message_ts=ts, user=user,
                            user_name=name)
        assert _click(client, body).status_code == 200
        return TriageActivity.objects.filter(session=session).latest("id").actor

    assert click("triage_claim", "U0BOB", "bob.smith") == "slack:bob.smith"  # no TARSy user matches him
    fake_slack.outage = True  # users.info unreachable: the click still counts, as the Slack handle
    assert click("triage_acknowledge", "U0ALICE", "alice") == "slack:alice"
    fake_slack.outage = False
    slack_on(users={"U0BOB": "bob@example.com"})  # the configured mapping
    assert click("triage_reopen", "U0BOB", "bob.smith") == "bob@example.com"
    assert click("triage_claim", "U0ALICE", "alice") == "alice"  # by her Slack email
    session.refresh_from_db()
    assert session.assignee == "alice"


@pytest.mark.django_db
def test_resolving_by_slash_command_with_a_masked_note(slack_on, fake_slack, client):
    session, ts = _finished_in_slack(fake_slack)
    response = _command(client, f"resolve <https://tarsy.example.com/sessions/{session.id}> Duplicate "
                                f"same as INC-42 password=hunter2-Secret-Value")
    assert response.status_code == 200, response.content
    reply = response.json()
    assert reply["response_type"] == "ephemeral" and reply["text"].startswith("Resolved <https://tarsy.example.com/")
    session.refresh_from_db()
    assert (session.triage_status, session.resolution) == ("resolved", "duplicate")
    assert session.assignee == "slack:alice"  # no TARSy user has Alice's email here
    assert "INC-42" in session.resolution_note and "hunter2" not in session.resolution_note
    entry = TriageActivity.objects.get(session=session)
    assert (entry.actor, entry.action, entry.resolution) == ("slack:alice", "resolve", "duplicate")

    deliver(session_id=session.id)
    text = blocks_text(fake_slack.replies(ts)[-1].blocks)
    assert "Resolved as duplicate by slack:alice: same as INC-42" in text and "hunter2" not in text
    assert not any("hunter2" in str(call.body) for call in fake_slack.calls)


@pytest.mark.django_db
def test_slash_command_refusals_and_help_are_clear_replies(slack_on, fake_slack, client):
    session, _ = _finished_in_slack(fake_slack)
    assert "Claimed" in _command(client, f"claim {session.id}").json()["text"]
    taken = _command(client, f"claim {session.id}", user="U0BOB", user_name="bob.smith").json()["text"]
    assert taken == "Already claimed by slack:alice: nothing changed."
    unknown = _command(client, f"claim {uuid.uuid4()}").json()["text"]
    assert unknown.startswith("TARSy has no such session")
    wrong = _command(client, f"resolve {session.id} fixed").json()["text"]
    assert "Resolve as one of `actioned`, `dismissed`, `duplicate`, `false_positive`" in wrong
    for text in ["", "help", "claim", "claim not-a-session", "frobnicate x"]:
        assert _command(client, text).json()["text"].startswith("Usage:")
    session.refresh_from_db()
    assert (session.triage_status, session.assignee) == ("in_progress", "slack:alice")


@pytest.mark.django_db
def test_a_click_that_cannot_act_is_answered_ephemerally(slack_on, fake_slack, client):
    session, ts = _finished_in_slack(fake_slack)
    gone = block_action(action_id="triage_claim", block_id=f"triage:{uuid.uuid4()}", message_ts=ts)
    assert _click(client, gone).status_code == 200
    [notice] = fake_slack.ephemeral
    assert notice["user"] == "U0ALICE" and notice["text"].startswith("TARSy has no such session")
    # The "Open in TARSy" link button also reaches the endpoint when interactivity is on: nothing to do.
    body = block_action(action_id="open_session", block_id="abc", message_ts=ts)
    assert _click(client, body).status_code == 200
    assert not TriageActivity.objects.exists() and len(fake_slack.ephemeral) == 1


@pytest.mark.django_db
def test_requests_not_signed_by_slack_change_nothing(slack_on, fake_slack, client):
    session, ts = _finished_in_slack(fake_slack)
    body = block_action(action_id="triage_claim", block_id=f"triage:{session.id}", message_ts=ts)
    for headers in [{}, signed_headers(body, secret="another-apps-secret"),
                    signed_headers(body, timestamp=int(timezone.now().timestamp()) - 6 * 60)]:
        response = client.post(INTERACTIONS, body, content_type=FORM, **headers)
        assert response.status_code == 401 and response.json()["error"] == "unauthorized"
    session.refresh_from_db()
    assert session.triage_status == "needs_review" and not TriageActivity.objects.exists()


@pytest.mark.django_db
def test_malformed_interactions_are_400_and_other_types_are_ignored(slack_on, fake_slack, client):
    session, ts = _finished_in_slack(fake_slack)

    def payload(**changes) -> str:
        """A valid resolve click with some fields replaced."""
        base = json.loads(parse_qs(block_action(action_id="triage_resolve", block_id=f"triage:{session.id}",
                                                message_ts=ts, selected="duplicate"))["payload"][0])
        base.update(changes)
        return urlencode({"payload": json.dumps(base)})

    bad = ["", "payload=not-json", "payload=%5B1%5D", "payload=%7B%7D", payload(user={}), payload(actions=[]),
           payload(actions=[{"action_id": "triage_claim", "block_id": "triage:nope"}]),
           payload(actions=[{"action_id": "triage_resolve", "block_id": f"triage:{session.id}"}]),
           payload(actions=["triage_claim"])]
    for body in bad:
        response = _click(client, body)
        assert response.status_code == 400, (body, response.content)
        assert response.json()["error"] == "bad_request"
    assert _click(client, payload(type="view_submission")).status_code == 200
    session.refresh_from_db()
    assert session.triage_status == "needs_review" and not TriageActivity.objects.exists()


@pytest.mark.django_db
def test_a_claim_in_the_dashboard_is_told_in_the_thread(slack_on, fake_slack):
    session, ts = _finished_in_slack(fake_slack)
    response = Client().post(f"/api/v1/sessions/{session.id}/triage", {"action": "claim"},
                             content_type="application/json")
    assert response.status_code == 200, response.content
    deliver(session_id=session.id)
    assert "Claimed by api-client" in blocks_text(fake_slack.replies(ts)[-1].blocks)  # the local user (mode none)


@pytest.mark.django_db(transaction=True)
def test_two_members_claiming_at_once_one_wins_the_other_is_told(slack_on, fake_slack):
    session, ts = _finished_in_slack(fake_slack)
    barrier, responses = threading.Barrier(2), {}

    def claim(user: str, name: str) -> None:
        try:
            body = block_action(action_id="triage_claim", block_id=f"triage:{session.id}", message_ts=ts,
                                user=user, user_name=name)
            headers = signed_headers(body)
            barrier.wait(timeout=10)
            responses[user] = Client(REMOTE_ADDR="203.0.113.7").post(INTERACTIONS, body, content_type=FORM,
                                                                     **headers)
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=args) for args in [("U0ALICE", "alice"), ("U0BOB", "bob.smith")]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert {user: r.status_code for user, r in responses.items()} == {"U0ALICE": 200, "U0BOB": 200}
    [entry] = TriageActivity.objects.filter(session=session)
    winner = entry.actor
    [notice] = fake_slack.ephemeral
    loser = {"slack:alice": "U0BOB", "slack:bob.smith": "U0ALICE"}[winner]
    assert notice == {"channel": "CALERTS", "user": loser, "text": f"Already claimed by {winner}: nothing changed."}
    session.refresh_from_db()
    assert (session.triage_status, session.assignee) == ("in_progress", winner)


@pytest.mark.django_db
def test_a_replayed_signed_request_acts_once(slack_on, fake_slack, client):
    """A signed `/tarsy resolve`, captured and sent again within Slack's five-minute signature window after the
    session was reopened, must not resolve it again; nor may a replayed click claim it."""
    session, ts = _finished_in_slack(fake_slack)
    body = slash_command(f"resolve {session.id} duplicate INC-42")
    headers = signed_headers(body)
    assert client.post(COMMANDS, body, content_type=FORM, **headers).json()["text"].startswith("Resolved")
    assert _command(client, f"reopen {session.id}").json()["text"].startswith("Reopened")

    replayed = client.post(COMMANDS, body, content_type=FORM, **headers)
    assert replayed.status_code == 200 and "already" in replayed.json()["text"]
    session.refresh_from_db()
    assert session.triage_status == "needs_review"
    assert [e.action for e in TriageActivity.objects.filter(session=session).order_by("id")] == ["resolve", "reopen"]

    click = block_action(action_id="triage_claim", block_id=f"triage:{session.id}", message_ts=ts, user="U0BOB",
                         user_name="bob.smith")
    click_headers = signed_headers(click)
    assert client.post(INTERACTIONS, click, content_type=FORM, **click_headers).status_code == 200
    assert _command(client, f"resolve {session.id} actioned").json()["text"].startswith("Resolved")
    assert _command(client, f"reopen {session.id}").json()["text"].startswith("Reopened")
    assert client.post(INTERACTIONS, click, content_type=FORM, **click_headers).status_code == 200
    session.refresh_from_db()
    assert session.triage_status == "needs_review"
    assert TriageActivity.objects.filter(session=session, action="claim").count() == 1
