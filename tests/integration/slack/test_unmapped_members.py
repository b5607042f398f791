"""A Slack member TARSy cannot map to an identity (not in `slack.users`, no TARSy user with their Slack email)
cannot act on any session — triage, decide an action, ask — unless `slack.allow_unmapped` says so; then they act as
`slack:<handle>`. Against the wire-level fake Slack, with requests signed as Slack signs them."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from tarsy.models import ChatUserMessage, SlackThread, TriageActivity
from tests.integration.slack.test_action_approvals import _proposed
from tests.integration.slack.test_triage import _finished_in_slack
from tests.support.slack import block_action, mention_event, signed_headers, slack_section, slash_command

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

INTERACTIONS, COMMANDS, EVENTS = "/api/v1/slack/interactions", "/api/v1/slack/commands", "/api/v1/slack/events"
FORM = "application/x-www-form-urlencoded"
NOT_KNOWN = "TARSy does not know this Slack member (U0BOB)"


@pytest.fixture
def slack_with(scripted_config, fake_slack, slack_env):
    """Slack configured with `slack` settings; bob (no email shared) is nobody TARSy knows, and "slack:bob.smith"
    is even listed as an approver, as a name someone might have guessed."""
    def make(**slack):
        scripted_config({"KubernetesAgent": [{"text": "Final Answer: done"}]}, tarsy={
            "system": {"external_url": "https://tarsy.example.com/"},
            "slack": slack_section(fake_slack.url, **slack),
            "actions": {"enabled": True, "approvers": ["sre-oncall", "slack:bob.smith"]},
            "mcp_servers": {"cluster": {"transport": {"type": "stdio", "command": "unused"}, "actions": True,
                                        "action_tools": ["resources_scale"]}},
            "agents": {"Fixer": {"type": "action", "mcp_servers": ["cluster"]}},
            "agent_chains": {"repair": {"alert_types": ["repair"], "stages": [
                {"name": "remediate", "type": "action", "agents": [{"name": "Fixer"}]}]}}})
        fake_slack.add_member("U0ALICE", "alice", "alice@example.com")
        fake_slack.add_member("U0BOB", "bob.smith")
    return make


def _post(client: Client, path: str, body: str, content_type: str = FORM):
    response = client.post(path, body, content_type=content_type, **signed_headers(body))
    assert response.status_code == 200, response.content
    return response


def test_an_unmapped_member_cannot_triage_decide_or_ask(slack_with, fake_slack):
    slack_with()
    client = Client(REMOTE_ADDR="203.0.113.7")
    session, ts = _finished_in_slack(fake_slack)

    _post(client, INTERACTIONS, block_action(action_id="triage_claim", block_id=f"triage:{session.id}",
                                             message_ts=ts, user="U0BOB", user_name="bob.smith"))
    assert fake_slack.ephemeral[-1]["user"] == "U0BOB" and NOT_KNOWN in fake_slack.ephemeral[-1]["text"]
    reply = _post(client, COMMANDS, slash_command(f"resolve {session.id} dismissed", user="U0BOB",
                                                  user_name="bob.smith")).json()["text"]
    assert NOT_KNOWN in reply
    session.refresh_from_db()
    assert (session.triage_status, session.assignee) == ("needs_review", "")
    assert not TriageActivity.objects.exists()

    proposal = _proposed()
    reply = _post(client, COMMANDS, slash_command(f"approve {proposal.id}", user="U0BOB",
                                                  user_name="bob.smith")).json()["text"]
    proposal.refresh_from_db()
    assert proposal.status == "pending" and NOT_KNOWN in reply

    asked = _post(client, COMMANDS, slash_command(f"ask {session.id} why?", user="U0BOB", user_name="bob.smith"))
    assert NOT_KNOWN in asked.json()["text"]
    thread = SlackThread.objects.get(session=session)
    _post(client, EVENTS, mention_event(channel=thread.channel, thread_ts=thread.ts, text="<@U0TARSY> why?",
                                        user="U0BOB"), content_type="application/json")
    assert not ChatUserMessage.objects.exists()


def test_a_mapped_member_acts_and_allow_unmapped_lets_others_act_as_their_handle(slack_with, fake_slack):
    slack_with(allow_unmapped=True)
    alice = get_user_model().objects.create_user("alice", email="alice@example.com")
    alice.groups.add(Group.objects.create(name="sre-oncall"))
    client = Client(REMOTE_ADDR="203.0.113.7")
    session, _ = _finished_in_slack(fake_slack)
    reply = _post(client, COMMANDS, slash_command(f"claim {session.id}", user="U0BOB",
                                                  user_name="bob.smith")).json()["text"]
    assert reply.startswith("Claimed") and "slack:bob.smith" in reply
    proposal = _proposed()
    assert _post(client, COMMANDS, slash_command(f"approve {proposal.id}")).json()["text"].startswith("Approved")
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decided_by) == ("approved", "alice")
