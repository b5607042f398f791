"""Approved actions on the dashboard, rendered by Django: a session's pending proposal with its dry-run diff, its
justification's citations linked, Approve / Reject for approvers only (others read who may decide), every action
with its state and outcome, and the Actions page listing what waits across sessions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from tarsy.models import ActionProposal, AgentExecution, AlertSession, Stage, TimelineEvent
from tests.support.configdir import PROXY_ON_LOOPBACK, write_config

pytestmark = [pytest.mark.django_db]

EVIL = '<img src=x onerror="window.__xss=1">'
DIFF = "--- deployment.apps/api (live)\n+++ deployment.apps/api (dry run: server)\n@@ spec @@\n-replicas: 1\n" \
       "+replicas: 3\n"


@pytest.fixture
def approvers(tmp_path):
    """Approvers by group and by name, people named by the authenticating proxy."""
    write_config(tmp_path / "cfg", tarsy={"system": PROXY_ON_LOOPBACK,
                                          "actions": {"enabled": True, "approvers": ["sre-oncall", "alice"]}})


def _execution(title: str) -> AgentExecution:
    session = AlertSession.objects.create(alert_data='{"pod": "api"}', alert_type="repair", chain_id="repair",
                                          status="in_progress", title=title)
    stage = Stage.objects.create(session=session, name="remediate", index=0, status="active")
    execution = AgentExecution.objects.create(stage=stage, session=session, agent_name="Fixer",
                                              iteration_strategy="native-thinking", status="waiting")
    TimelineEvent.objects.create(session=session, stage=stage, execution=execution, sequence_number=1,
                                 event_type="tool_result", content="replicas: 1",
                                 metadata={"server_name": "cluster", "tool_name": "resources_get", "evidence_id": "E1"})
    return execution


def _proposal(execution: AgentExecution, **fields) -> ActionProposal:
    defaults = {"iteration": 2, "server": "cluster", "tool": "resources_scale",
                "arguments": {"namespace": "shop", "name": "api", "replicas": 3},
                "justification": f"api has 1 of 3 replicas [E1] {EVIL}", "expected_effect": "3 ready replicas",
                "verify_tool": "cluster.resources_get", "verify_arguments": {"name": "api"},
                "verify_expect": "readyReplicas: 3", "dry_run": DIFF, "dry_run_status": "ran",
                "expires_at": timezone.now() + timedelta(hours=1)}
    return ActionProposal.objects.create(session=execution.session, execution=execution, **{**defaults, **fields})


def _page(session_id, user: str, groups: str = "") -> str:
    client = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_USER=user, HTTP_X_FORWARDED_GROUPS=groups)
    return client.get(f"/sessions/{session_id}").content.decode()


def test_an_approver_sees_the_pending_action_with_its_dry_run_diff_and_the_buttons(approvers):
    execution = _execution("api short of replicas")
    proposal = _proposal(execution)
    html = _page(execution.session_id, "bob", "sre-oncall")
    panel = html[html.index('id="actions-panel"'):]
    assert 'Pending actions <span class="count">(1)</span>' in panel
    assert '<span class="diff-del">-replicas: 1</span><span class="diff-add">+replicas: 3</span>' in panel
    assert '<span class="diff-hunk">@@ spec @@</span>' in panel
    event = TimelineEvent.objects.get(session=execution.session, event_type="tool_result")
    assert f'href="#event-{event.id}" data-cite-event="{event.id}"' in panel  # [E1] links to its evidence
    assert EVIL not in html and "&lt;img" in panel
    assert f'data-action-form="{proposal.id}"' in panel and 'data-action-decide="approve"' in panel
    assert f'data-until="{proposal.expires_at.isoformat()}"' in panel


def test_a_non_approver_sees_the_proposal_without_buttons_and_who_may_decide(approvers):
    execution = _execution("api")
    _proposal(execution, dry_run="", dry_run_status="unsupported")
    html = _page(execution.session_id, "mallory", "dev")
    assert "+replicas" not in html and "No dry-run for this tool." in html
    assert "data-action-decide" not in html
    assert "Only the approvers may approve or reject: <strong>sre-oncall</strong>, <strong>alice</strong>" in html
    assert "You are mallory." in html


def test_every_action_of_the_session_shows_its_state_and_outcome(approvers):
    execution = _execution("api")
    _proposal(execution, status="executed", outcome="not_verified", decided_by="alice",
              decided_at=timezone.now(), comment="go", evidence="readyReplicas: 1", result="scaled to 3")
    _proposal(execution, status="rejected", decided_by="alice", decided_at=timezone.now(),
              arguments={"namespace": "shop", "name": "api", "replicas": 1}, dry_run="boom", dry_run_status="failed")
    _proposal(execution, status="withdrawn", reason="the alert resolved meanwhile", decided_by="alice",
              decided_at=timezone.now())
    html = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_USER="alice").get(
        f"/sessions/{execution.session_id}/fragments/actions").content.decode()
    assert 'Pending actions <span class="count">(0)</span>' in html and "No action waits for a decision." in html
    assert html.count('class="action-row"') == 3
    assert 'data-status="executed" data-outcome="not_verified"' in html and "Last verification read" in html
    assert "readyReplicas: 1" in html and "dry run failed" in html and "Rejected by <strong>alice</strong>" in html
    assert "TARSy took it back before it ran: the alert resolved meanwhile" in html


def test_the_actions_page_lists_pending_actions_newest_first_with_their_sessions(approvers):
    older = _proposal(_execution("first session"))
    newer = _proposal(_execution("second session"))
    _proposal(_execution("decided"), status="rejected", decided_by="alice")
    html = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_USER="alice").get("/actions").content.decode()
    assert html.index(f'data-action-id="{newer.id}"') < html.index(f'data-action-id="{older.id}"')
    assert f'href="/sessions/{older.session_id}#actions-panel">first session</a>' in html
    assert "decided</a>" not in html and 'href="/actions" aria-current="page"' in html
