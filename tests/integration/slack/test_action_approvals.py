"""Approved actions in Slack, against the wire-level fake Slack Web API with requests signed as Slack signs them:
a proposal goes into the session's thread (through the Slack outbox) with its Approve / Reject buttons; an
approver's click decides as their TARSy identity and wakes the parked execution; a non-approver, a decided or an
expired proposal and a bad signature change nothing; the Reject form and `/tarsy approve|reject`; the proposal's
reply is edited in place once decided, and the outcome of a run goes into the thread.
(The whole flow through a real worker is in test_action_approvals_flow.py.)"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from urllib.parse import parse_qs

import pytest
from celery.signals import before_task_publish
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.test import Client
from django.utils import timezone

from tarsy.models import ActionProposal, AgentExecution, DryRunStatus, OutboxTask, SlackPost
from tarsy.pipeline.actions.decisions import action_decide, expired_wake
from tarsy.services import actions, executions, stages
from tarsy.services.intake.alerts import session_submit
from tarsy.services.queue import session_claim
from tarsy.slack.delivery import deliver
from tests.fakes.mcp_servers import deployments_file_server
from tests.support.slack import (
    block_action,
    blocks_text,
    signed_headers,
    slack_section,
    slash_command,
    view_submission,
)

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

INTERACTIONS, COMMANDS = "/api/v1/slack/interactions", "/api/v1/slack/commands"
FORM = "application/x-www-form-urlencoded"
TARGET = {"namespace": "shop", "name": "api"}
SECRET = "password=hunter2-Secret-Value"


@pytest.fixture
def slack_on(scripted_config, fake_slack, slack_env, tmp_path):
    scripted_config({"Fixer": [{"text": "never runs here"}]}, tarsy={
        "system": {"external_url": "https://tarsy.example.com/"},
        "slack": slack_section(fake_slack.url, allow_unmapped=True),  # bob acts as slack:bob.smith
        "actions": {"enabled": True, "approvers": ["sre-oncall"]},
        "mcp_servers": {"cluster": {
            "transport": {"type": "stdio", "command": sys.executable,
                          "args": [deployments_file_server.__file__, str(tmp_path / "cluster.json")]},
            "actions": True, "action_tools": ["resources_scale"]}},
        "agents": {"Fixer": {"type": "action", "mcp_servers": ["cluster"]}},
        "agent_chains": {"repair": {"alert_types": ["repair"], "stages": [
            {"name": "remediate", "type": "action", "agents": [{"name": "Fixer"}]}]}},
    })
    fake_slack.add_member("U0ALICE", "alice", "alice@example.com")
    fake_slack.add_member("U0BOB", "bob.smith")  # no email shared with the app: acts as slack:bob.smith
    alice = get_user_model().objects.create_user("alice", email="alice@example.com")
    alice.groups.add(Group.objects.create(name="sre-oncall"))  # an approver by group, as with an API token


@pytest.fixture
def client():
    return Client(REMOTE_ADDR="203.0.113.7")  # Slack is not on loopback


def _proposed(arguments: dict | None = None, **dry_run: str) -> ActionProposal:
    """A running repair session whose action agent proposed to scale shop/api to 3 (or `arguments`) and parked."""
    session = session_submit(alert_type="repair", data={"deployment": "shop/api"})
    assert session_claim(session=session, worker_id="w1", now=timezone.now())
    stage = stages.stage_start_chain(session=session, chain_stage_index=0)
    execution = AgentExecution.objects.get(stage=stage)
    with transaction.atomic():  # as iteration_finish does: the proposal and the park commit together
        proposal = actions.action_proposal_create(
            execution=execution, iteration=1, server="cluster", tool="resources_scale", target="cluster:shop/api",
            arguments=arguments or {**TARGET, "replicas": 3},
            justification=f"api runs 1 of 3 replicas [ev-1]; {SECRET}",
            expected_effect="api runs 3 ready replicas", verify_tool="cluster.resources_get",
            verify_arguments=TARGET, verify_expect="readyReplicas: 3", ttl_s=3600, **dry_run)
        executions.execution_park(execution_id=execution.id)
    return proposal


def _in_slack(fake_slack, proposal: ActionProposal):
    """The proposal's reply in its session's thread (delivering what waits first)."""
    assert deliver(session_id=proposal.session_id) is None
    [post] = SlackPost.objects.filter(ref=f"action:{proposal.id}")
    return fake_slack.messages[post.ts]


def _buttons(message) -> dict:
    [block] = [b for b in message.blocks if str(b.get("block_id", "")).startswith("action:")]
    return block


def _click(client, proposal: ActionProposal, action_id: str, **kwargs):
    body = block_action(action_id=action_id, block_id=f"action:{proposal.id}", message_ts="1.2", **kwargs)
    response = client.post(INTERACTIONS, body, content_type=FORM, **signed_headers(body))
    assert response.status_code == 200, response.content
    return response


def _command(client, text: str, **kwargs) -> str:
    body = slash_command(text, **kwargs)
    response = client.post(COMMANDS, body, content_type=FORM, **signed_headers(body))
    assert response.status_code == 200, response.content
    return response.json()["text"]


def _state(proposal: ActionProposal) -> tuple[str, str]:
    proposal.refresh_from_db()
    execution = AgentExecution.objects.get(id=proposal.execution_id)
    return proposal.status, execution.status


def test_a_proposal_is_posted_into_the_thread_with_its_buttons_through_the_outbox(slack_on, fake_slack):
    proposal = _proposed()
    # Recorded in the proposing transaction, delivery decided with it: a process dying now loses nothing.
    [post] = SlackPost.objects.filter(ref=f"action:{proposal.id}", sent_at__isnull=True)
    assert post.kind == "action"
    assert OutboxTask.objects.filter(kind="SlackDeliver", fields__session_id=str(proposal.session_id)).exists()
    assert not fake_slack.calls

    message = _in_slack(fake_slack, proposal)
    [root] = fake_slack.top_level()  # the session had no thread yet: its message starts one
    assert message.thread_ts == root.ts and f"Session `{proposal.session_id}`" in blocks_text(root.blocks)
    text = blocks_text(message.blocks)
    for shown in ["Action proposed: approval needed* by Fixer", "`cluster.resources_scale`", '"replicas": 3',
                  "api runs 1 of 3 replicas [ev-1]", "*Expected effect*\napi runs 3 ready replicas",
                  "`cluster.resources_get`", "readyReplicas: 3", "Expires <!date^", f"Action `{proposal.id}`"]:
        assert shown in text, (shown, text)
    buttons = _buttons(message)
    assert [(e["action_id"], e["value"]) for e in buttons["elements"]] == [
        ("action_approve", str(proposal.id)), ("action_reject", str(proposal.id))]
    assert buttons["elements"][0]["confirm"]["confirm"]["text"] == "Approve"  # Slack asks before it runs
    assert not any("hunter2" in str(call.body) for call in fake_slack.calls)  # masked on its way out


def test_an_approvers_click_decides_wakes_the_execution_and_the_reply_shows_who(slack_on, fake_slack, client,
                                                                                django_capture_on_commit_callbacks):
    proposal = _proposed()
    message = _in_slack(fake_slack, proposal)
    sent: list[tuple[str, list]] = []

    def published(sender=None, body=None, **_):
        sent.append((sender, list(body[0])))

    before_task_publish.connect(published)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            _click(client, proposal, "action_approve")
    finally:
        before_task_publish.disconnect(published)
    assert _state(proposal) == ("approved", "pending")  # woken: its next iteration runs the action…
    execution = AgentExecution.objects.get(id=proposal.execution_id)
    # …sent to the broker once the decision commits
    assert ("tarsy.tasks.run_iteration", [str(proposal.execution_id), execution.iterations_completed + 1]) in sent
    assert (proposal.decided_by, proposal.comment) == ("alice", "")
    assert not fake_slack.ephemeral

    assert deliver(session_id=proposal.session_id) is None
    [update] = fake_slack.calls_to("chat.update")
    assert update.body["ts"] == message.ts  # the proposal's own reply, edited in place
    text = blocks_text(message.blocks)
    assert "*Approved* by alice <!date^" in text and "approval needed" not in text
    assert not [b for b in message.blocks if b["type"] == "actions"]  # no buttons once decided
    assert deliver(session_id=proposal.session_id) is None and len(fake_slack.calls_to("chat.update")) == 1


def test_a_non_approvers_click_is_refused_ephemerally_and_decides_nothing(slack_on, fake_slack, client):
    proposal = _proposed()
    _in_slack(fake_slack, proposal)
    for action_id in ["action_approve", "action_reject"]:
        _click(client, proposal, action_id, user="U0BOB", user_name="bob.smith")
    assert _state(proposal) == ("pending", "waiting")
    assert [(e["user"], e["text"]) for e in fake_slack.ephemeral] == [
        ("U0BOB", f"Cannot {verb}: only the configured approvers (actions.approvers) may decide actions; you act as "
                  "slack:bob.smith.") for verb in ("approve", "reject")]
    assert not fake_slack.views  # no Reject form for someone who may not reject


def test_a_decided_or_expired_proposal_is_refused_ephemerally(slack_on, fake_slack, client):
    decided, expired = _proposed(), _proposed()
    _click(client, decided, "action_approve")
    _click(client, decided, "action_approve")
    _click(client, decided, "action_reject")
    ActionProposal.objects.filter(id=expired.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    _click(client, expired, "action_approve")
    texts = [e["text"] for e in fake_slack.ephemeral]
    assert texts[:2] == [f"Cannot {verb}: action {decided.id} is already approved. Nothing changed."
                         for verb in ("approve", "reject")]
    assert texts[2].startswith(f"Cannot approve: action {expired.id} expired at ")
    assert _state(decided)[0] == "approved" and _state(expired) == ("pending", "waiting")
    assert not fake_slack.views

    message = _in_slack(fake_slack, expired)
    assert expired_wake() == 1  # the sweeper's pass: the reply says so, without buttons
    deliver(session_id=expired.session_id)
    assert "*Expired* <!date^" in blocks_text(message.blocks) and "nobody decided in time" in blocks_text(
        message.blocks)
    assert not [b for b in message.blocks if b["type"] == "actions"]


def test_only_a_request_signed_by_slack_decides(slack_on, fake_slack, client):
    proposal = _proposed()
    body = block_action(action_id="action_approve", block_id=f"action:{proposal.id}", message_ts="1.2")
    for headers in [{}, signed_headers(body, secret="another-apps-secret"),
                    signed_headers(body, timestamp=int(timezone.now().timestamp()) - 6 * 60)]:
        response = client.post(INTERACTIONS, body, content_type=FORM, **headers)
        assert response.status_code == 401 and response.json()["error"] == "unauthorized"
    command = slash_command(f"approve {proposal.id}")
    assert client.post(COMMANDS, command, content_type=FORM).status_code == 401
    assert _state(proposal) == ("pending", "waiting")
    assert client.post(INTERACTIONS, body, content_type=FORM, **signed_headers(body)).status_code == 200
    assert _state(proposal) == ("approved", "pending")  # the same click, signed by Slack


def test_reject_asks_why_in_a_form_and_rejects_with_the_masked_comment(slack_on, fake_slack, client):
    proposal = _proposed()
    message = _in_slack(fake_slack, proposal)
    clicked = _click(client, proposal, "action_reject")
    [view] = fake_slack.views
    trigger = json.loads(parse_qs(clicked.wsgi_request.body.decode())["payload"][0])["trigger_id"]
    assert view["trigger_id"] == trigger and view["callback_id"] == "action_reject"
    assert "Reject `cluster.resources_scale`?" in blocks_text(view["blocks"])
    assert _state(proposal) == ("pending", "waiting")  # nothing decided until the form is submitted

    def submit(user: str, name: str):
        body = view_submission(view=view, comment=f"quota is the cause, not replicas {SECRET}", user=user,
                               user_name=name)
        return client.post(INTERACTIONS, body, content_type=FORM, **signed_headers(body))

    refused = submit("U0BOB", "bob.smith")  # the form was passed on: the decision checks again
    assert refused.status_code == 200 and refused.json()["response_action"] == "errors"
    assert "only the configured approvers" in refused.json()["errors"]["comment"]
    closed = submit("U0ALICE", "alice")
    assert closed.status_code == 200 and closed.content == b""  # an empty 200 closes the form
    assert _state(proposal) == ("rejected", "pending")
    assert proposal.decided_by == "alice" and "quota is the cause" in proposal.comment
    assert "hunter2" not in proposal.comment

    deliver(session_id=proposal.session_id)
    text = blocks_text(message.blocks)
    assert "*Rejected* by alice <!date^" in text and "quota is the cause, not replicas" in text
    assert "It did not run." in text and not [b for b in message.blocks if b["type"] == "actions"]
    assert not any("hunter2" in str(call.body) for call in fake_slack.calls)


def test_when_the_form_cannot_open_the_member_is_told_the_command(slack_on, fake_slack, client):
    proposal = _proposed()
    fake_slack.fail("views.open", "expired_trigger_id")  # Slack took too long to hand the click over
    _click(client, proposal, "action_reject")
    [notice] = fake_slack.ephemeral
    assert notice["text"] == (f"Could not open the Reject form; reject with `/tarsy reject {proposal.id} &lt;why&gt;` "
                              "instead.")
    assert _state(proposal) == ("pending", "waiting")


def test_malformed_decisions_are_400_and_decide_nothing(slack_on, fake_slack, client):
    proposal = _proposed()
    view = {"type": "modal", "callback_id": "action_reject", "private_metadata": str(proposal.id)}
    bad = [block_action(action_id="action_approve", block_id="action:not-an-id", message_ts="1.2"),
           block_action(action_id="action_approve", block_id=f"triage:{proposal.id}", message_ts="1.2"),
           view_submission(view={**view, "private_metadata": "{}"}, comment="no"),
           view_submission(view=view, comment="no").replace("%22value%22%3A+%22no%22", "%22value%22%3A+null")]
    for body in bad:
        response = client.post(INTERACTIONS, body, content_type=FORM, **signed_headers(body))
        assert response.status_code == 400 and response.json()["error"] == "bad_request", body
    other = view_submission(view={**view, "callback_id": "someone_elses_form"}, comment="no")
    assert client.post(INTERACTIONS, other, content_type=FORM, **signed_headers(other)).status_code == 200
    assert _state(proposal) == ("pending", "waiting")


def test_slash_commands_approve_and_reject(slack_on, fake_slack, client):
    approved, rejected = _proposed(), _proposed()
    reply = _command(client, f"approve {approved.id} go ahead")
    assert reply.startswith(f"Approved action `{approved.id}` (`cluster.resources_scale`) "
                            f"(<https://tarsy.example.com/sessions/{approved.session_id}|its session>) as alice")
    assert _state(approved) == ("approved", "pending") and approved.comment == "go ahead"
    assert _command(client, f"reject {rejected.id}").startswith("Usage:")  # a rejection says why
    assert _command(client, f"reject {rejected.id} quota", user="U0BOB", user_name="bob.smith").startswith(
        "Cannot reject: only the configured approvers")
    assert _command(client, f"reject {rejected.id} quota, not replicas").startswith(
        f"Rejected action `{rejected.id}`")
    assert _state(rejected) == ("rejected", "pending") and rejected.comment == "quota, not replicas"
    assert _command(client, f"approve {rejected.id}") == (f"Cannot approve: action {rejected.id} is already "
                                                          "rejected. Nothing changed.")
    assert _command(client, "approve 00000000-0000-0000-0000-000000000000").startswith("TARSy has no such action")
    assert "`/tarsy approve <action ID> [comment]`" in _command(client, "help")


def test_a_decision_before_the_proposal_reached_slack_is_posted_decided(slack_on, fake_slack, client):
    proposal = _proposed()
    _click(client, proposal, "action_approve")  # Slack was slow: the thread is not even there yet
    message = _in_slack(fake_slack, proposal)
    assert "*Approved* by alice" in blocks_text(message.blocks) and not fake_slack.calls_to("chat.update")


@pytest.mark.django_db(transaction=True)
def test_a_decision_while_the_proposal_is_being_posted_is_shown_by_an_update(slack_on, fake_slack):
    from django.db import connection

    proposal = _proposed()

    def approve_from_another_process() -> None:  # while Slack has not answered the post yet
        try:
            action_decide(proposal_id=proposal.id, approve=True, identity="alice", groups={"sre-oncall"},
                          comment="")
        finally:
            connection.close()

    fake_slack.before_reply(approve_from_another_process)
    message = _in_slack(fake_slack, proposal)
    [update] = fake_slack.calls_to("chat.update")
    assert update.body["ts"] == message.ts and "*Approved* by alice" in blocks_text(message.blocks)
    assert "approval needed" in blocks_text(message.edits[0]["blocks"])  # what was posted first
    assert not SlackPost.objects.filter(edited_at__isnull=False).exists()


def test_the_outcome_goes_into_the_thread_and_the_proposal_shows_it(slack_on, fake_slack, client):
    proposal = _proposed()
    message = _in_slack(fake_slack, proposal)
    _click(client, proposal, "action_approve")
    assert actions.action_claim(proposal_id=proposal.id)  # what the woken iteration does, then it verifies
    actions.action_executed(proposal_id=proposal.id, outcome="not_verified", result="deployment.apps/api scaled",
                            evidence="replicas: 3\nreadyReplicas: 1")
    deliver(session_id=proposal.session_id)
    assert "*Approved* by alice" in blocks_text(message.blocks)
    assert "Ran: *not verified*" in blocks_text(message.blocks)
    outcome = fake_slack.replies(message.thread_ts)[-1]
    text = blocks_text(outcome.blocks)
    assert "*Action not verified*: `cluster.resources_scale` ran but `cluster.resources_get` does not show" in text
    assert "readyReplicas: 1" in text and "propose a follow-up" in text


def test_the_dry_run_is_shown_with_the_proposal(slack_on, fake_slack):
    diff = "--- deployment.apps/api (live)\n+++ deployment.apps/api (dry run: server)\n-replicas: 1\n+replicas: 3"
    proposal = _proposed(dry_run=diff, dry_run_status=DryRunStatus.RAN)
    text = blocks_text(_in_slack(fake_slack, proposal).blocks)
    assert "*Dry run* (the server's preview; nothing was changed)" in text and "+replicas: 3" in text, text


def test_a_withdrawn_proposal_loses_its_buttons_and_says_why(slack_on, fake_slack, client):
    pending, approved = _proposed(), _proposed()
    first, second = _in_slack(fake_slack, pending), _in_slack(fake_slack, approved)
    _click(client, approved, "action_approve")
    with transaction.atomic():
        actions.actions_withdraw(session_id=pending.session_id, reason="the alert resolved meanwhile")
        actions.actions_withdraw(session_id=approved.session_id, reason="the alert resolved meanwhile")
    deliver(session_id=pending.session_id)
    deliver(session_id=approved.session_id)
    assert "*Withdrawn*: the alert resolved meanwhile. It did not run." in blocks_text(first.blocks)
    assert "*Withdrawn* after approval by " in blocks_text(second.blocks)
    assert not [b for m in (first, second) for b in m.blocks if b["type"] == "actions"]


def _binding(padding: int) -> dict:
    """Arguments whose dangerous part (a ClusterRoleBinding to cluster-admin) comes after `padding` characters of
    harmless-looking labels: once, a 1,500-character cut hid it and the approval from Slack ran it."""
    labels = {f"team.example.com/label-{i:04d}": "platform & <sre>" for i in range(padding // 48)}
    manifest = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "api-debug", "labels": labels},
                "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": "api", "namespace": "shop"}]}
    return {**TARGET, "replicas": 3, "manifest": manifest}


def _shown(message) -> str:
    """What a reader of the message sees, with Slack's escapes read back."""
    return blocks_text(message.blocks).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def test_arguments_past_a_section_are_shown_whole_before_slack_may_approve_them(slack_on, fake_slack, client):
    proposal = _proposed(arguments=_binding(6000))
    message = _in_slack(fake_slack, proposal)
    assert fake_slack.calls_to("chat.postMessage", ok=True)  # within Slack's block limits
    code = "".join(b["text"]["text"].removeprefix("```").removesuffix("```") for b in message.blocks
                   if b["type"] == "section" and b["text"]["text"].startswith("```"))
    code = code.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert json.dumps(proposal.arguments, ensure_ascii=False, indent=2) in code  # every character, in order
    assert '"name": "cluster-admin"' in _shown(message)
    assert [e["action_id"] for e in _buttons(message)["elements"]] == ["action_approve", "action_reject"]
    _click(client, proposal, "action_approve")
    assert _state(proposal)[0] == "approved"


def test_arguments_too_long_for_slack_are_never_approved_there(slack_on, fake_slack, client):
    """Slack says the arguments do not fit and sends the approver to the dashboard: no Approve ("runs as shown")
    on a cut, and neither a click nor `/tarsy approve` approves it; rejecting still works."""
    proposal = _proposed(arguments=_binding(60000))
    message = _in_slack(fake_slack, proposal)
    shown = _shown(message)
    assert "The arguments are too long to show in Slack" in shown and "runs as shown" not in shown
    assert f"<https://tarsy.example.com/sessions/{proposal.session_id}|the dashboard>" in blocks_text(message.blocks)
    assert [e["action_id"] for e in _buttons(message)["elements"]] == ["action_reject"]

    _click(client, proposal, "action_approve")  # a click from a message shown before, with the button
    reply = _command(client, f"approve {proposal.id}")
    assert _state(proposal)[0] == "pending"
    assert "too long to show in Slack" in reply and "dashboard" in reply
    assert "too long to show in Slack" in fake_slack.ephemeral[-1]["text"]
    _command(client, f"reject {proposal.id} not without reading it")
    assert _state(proposal)[0] == "rejected"
