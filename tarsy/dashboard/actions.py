"""Approved actions on the dashboard: a session page's panel (pending proposals with their dry run, for approvers with
Approve / Reject, then every action of the session with its state and outcome) and the Actions page (what waits for a
decision across sessions). Decisions go through /api/v1/actions (tarsy/static/tarsy/actions.js), as every dashboard
write goes through the API."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.shortcuts import render
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET

from agents.timeline_events import TimelineEventType
from tarsy.config import get_config
from tarsy.identity import request_author, request_groups
from tarsy.models import ActionProposal, AlertSession, ProposalStatus, TimelineEvent
from tarsy.pipeline.actions.decisions import may_decide
from tarsy.selectors.actions import actions_pending, session_actions

from .access import dashboard_view
from .citations import evidence_in, link_answer
from .context import page_context
from .markdown import render_markdown

DIFF_CLASSES = (("+++", "diff-file"), ("---", "diff-file"), ("@@", "diff-hunk"), ("+", "diff-add"), ("-", "diff-del"))


@dataclass
class ActionView:
    """One proposal as the page shows it."""

    proposal: ActionProposal
    arguments: str
    verify_arguments: str
    justification: SafeString
    dry_run_lines: list[tuple[str, str]]
    open: bool = False

    @property
    def tool(self) -> str:
        return f"{self.proposal.server}.{self.proposal.tool}"

    @property
    def arguments_inline(self) -> str:
        return json.dumps(self.proposal.arguments, ensure_ascii=False)


def diff_lines(text: str) -> list[tuple[str, str]]:
    """A dry run's output as (css class, line): a unified diff's added, removed, hunk and file lines are told apart."""
    return [(next((css for prefix, css in DIFF_CLASSES if line.startswith(prefix)), "diff-ctx"), line)
            for line in text.splitlines()]


def _view(proposal: ActionProposal, justification: SafeString) -> ActionView:
    return ActionView(proposal=proposal, arguments=json.dumps(proposal.arguments, indent=2, ensure_ascii=False),
                      verify_arguments=json.dumps(proposal.verify_arguments, ensure_ascii=False),
                      justification=justification, dry_run_lines=diff_lines(proposal.dry_run))


def decider(request) -> dict[str, Any]:
    """Who is looking, whether they may decide, and who may (`actions.approvers`)."""
    who = request_author(request)
    return {"who": who, "may_decide": may_decide(who, request_groups(request)),
            "approvers": get_config().actions.approvers}


def session_actions_panel(request, session: AlertSession) -> dict[str, Any]:
    """Pending proposals first, then every proposal of the session (the latest decided one open); justifications link
    their evidence citations to the session's tool results, as the analysis does."""
    rows = session_actions(session_id=session.id)
    if not rows:
        return {"pending": [], "all": []}
    evidence = evidence_in(list(TimelineEvent.objects.filter(session_id=session.id,
                                                             event_type=TimelineEventType.TOOL_RESULT)))
    views = [_view(p, link_answer(render_markdown(p.justification), p.justification, evidence, session.alert_data))
             for p in rows]
    decided = [v for v in views if v.proposal.status != ProposalStatus.PENDING]
    if decided:
        decided[-1].open = True
    return {"pending": [v for v in views if v.proposal.status == ProposalStatus.PENDING], "all": views,
            **decider(request)}


@require_GET
@dashboard_view
def actions_page(request):
    """Proposals waiting for a decision across sessions, newest first, each linking to its session."""
    rows = [_view(p, render_markdown(p.justification)) for p in actions_pending()]
    return render(request, "dashboard/actions.html", page_context(request, rows=rows, **decider(request)))
