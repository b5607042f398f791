"""An action approved from its Slack thread, end to end: a real Celery worker runs an action agent (scripted
provider) against a write-mode MCP server whose state is a file; the proposal reaches the fake Slack Web API (real
HTTP on loopback) with its buttons; a non-approver's signed click is refused, an approver's runs it; the reply shows
the decision and the outcome, the outcome and the summary (with its Actions list) go into the thread."""

from __future__ import annotations

import sys

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from tarsy.models import ActionProposal, SlackPost
from tarsy.services.intake.alerts import session_submit
from tests.fakes.mcp_servers import deployments_file_server
from tests.fakes.mcp_servers.deployments_file_server import read_state, write_state
from tests.support.processes import wait_for
from tests.support.sessions import wait_terminal
from tests.support.slack import block_action, blocks_text, signed_headers, slack_section

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(240)]

TARGET = {"namespace": "shop", "name": "api"}
FORM = "application/x-www-form-urlencoded"
SCALE = {"tool_calls": [{"name": "cluster.resources_scale", "arguments": {
    **TARGET, "replicas": 3, "_justification": "api has 1 of 3 replicas and drops requests {evidence}",
    "_expected_effect": "api runs 3 ready replicas",
    "_verify": {"tool": "cluster.resources_get", "arguments": TARGET, "expect": "readyReplicas: 3"}}}]}
SCRIPT = {
    "Fixer": [{"tool_calls": [{"name": "cluster.resources_get", "arguments": TARGET}]}, SCALE,
              {"text": "api was short of replicas; scaled to 3, verified {evidence}."}],
    "executive_summary": ["shop/api was short of replicas."],  # the model forgets to say what was done
}


def test_an_action_approved_from_slack_runs_and_the_thread_tells_the_story(scripted_config, worker, fake_slack,
                                                                           slack_env, tmp_path):
    state = tmp_path / "cluster.json"
    write_state(state, {"shop/api": {"replicas": 1, "max_ready": None}})
    scripted_config(SCRIPT, tarsy={
        "system": {"external_url": "https://tarsy.example.com"},
        "slack": slack_section(fake_slack.url),
        "actions": {"enabled": True, "approvers": ["sre-oncall"], "verify_attempts": 2, "verify_interval": "1s"},
        "mcp_servers": {"cluster": {
            "transport": {"type": "stdio", "command": sys.executable,
                          "args": [deployments_file_server.__file__, str(state)]},
            "actions": True, "action_tools": ["resources_scale"]}},
        "agents": {"Fixer": {"type": "action", "iteration_strategy": "native-thinking", "mcp_servers": ["cluster"]}},
        "agent_chains": {"repair": {"alert_types": ["repair"], "stages": [
            {"name": "remediate", "type": "action", "agents": [{"name": "Fixer"}]}]}},
    })
    fake_slack.add_member("U0ALICE", "alice", "alice@example.com")
    fake_slack.add_member("U0BOB", "bob.smith")
    alice = get_user_model().objects.create_user("alice", email="alice@example.com")
    alice.groups.add(Group.objects.create(name="sre-oncall"))
    proc = worker(concurrency=2)
    session = session_submit(alert_type="repair", data={"deployment": "shop/api"})

    def proposal_in_slack():
        post = SlackPost.objects.filter(kind="action", ts__gt="").first()
        return fake_slack.messages.get(post.ts) if post else None
    message = wait_for(proposal_in_slack, timeout=60, message=f"the proposal in the thread\n{proc.log()[-3000:]}")
    proposal = ActionProposal.objects.get(session=session)
    [buttons] = [b for b in message.blocks if b.get("block_id") == f"action:{proposal.id}"]
    assert [e["action_id"] for e in buttons["elements"]] == ["action_approve", "action_reject"]
    assert read_state(state)["shop/api"]["replicas"] == 1  # proposed, not run

    def click(user: str, name: str):
        body = block_action(action_id="action_approve", block_id=buttons["block_id"], message_ts=message.ts,
                            user=user, user_name=name)
        return Client(REMOTE_ADDR="203.0.113.7").post("/api/v1/slack/interactions", body, content_type=FORM,
                                                      **signed_headers(body))

    assert click("U0BOB", "bob.smith").status_code == 200
    [refusal] = fake_slack.ephemeral
    assert refusal["user"] == "U0BOB" and "TARSy does not know this Slack member" in refusal["text"]
    proposal.refresh_from_db()
    assert proposal.status == "pending"
    assert click("U0ALICE", "alice").status_code == 200

    (done,) = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    proposal.refresh_from_db()
    assert (proposal.status, proposal.outcome, proposal.decided_by) == ("executed", "verified", "alice")
    assert read_state(state)["shop/api"]["replicas"] == 3
    summary, _, listed = done.executive_summary.partition("\n\n### Actions\n")  # the model's text, then code's
    assert summary == "shop/api was short of replicas."
    assert listed.startswith("- cluster.resources_scale {") and '"replicas": 3' in listed
    assert listed.endswith("}: approved by alice, ran, verified")

    def told() -> list[str] | None:
        replies = [blocks_text(m.blocks) for m in fake_slack.replies(message.thread_ts)]
        return replies if any("Investigation completed" in r for r in replies) else None
    replies = wait_for(told, timeout=30, message=f"the summary in the thread\n{proc.log()[-3000:]}")
    shown = blocks_text(message.blocks)  # the proposal's reply, edited in place
    assert "*Approved* by alice" in shown and "Ran: *verified*" in shown and "approval needed" not in shown
    [outcome] = [r for r in replies if "*Action verified*" in r]
    assert "`cluster.resources_get` shows “readyReplicas: 3”" in outcome
    closing = replies[-1]
    assert "shop/api was short of replicas." in closing and "*Actions*" in closing  # mrkdwn has no headings
    assert "cluster.resources_scale" in closing and "approved by alice, ran, verified" in closing
    assert len(fake_slack.top_level()) == 1
