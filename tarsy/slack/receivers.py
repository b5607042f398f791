"""Lifecycle signals → what the session's Slack thread should show, recorded in the sender's transaction.

Each receiver writes in a savepoint and swallows database errors (logged, counted): Slack bookkeeping must
never fail the investigation step that sent the signal. The delivery task is enqueued after the commit."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone

from tarsy.decisions import SlackDeliver, enact_on_commit
from tarsy.metrics import SLACK_DROPPED
from tarsy.models import (
    TERMINAL_SESSION_STATUSES,
    ActionProposal,
    AlertSession,
    CheckResult,
    ExecStatus,
    SlackPostKind,
    SlackThread,
    Stage,
    StageKind,
)
from tarsy.services import slack as slack_service
from tarsy.signals import (
    action_changed,
    alert_attached,
    alert_resolved,
    session_status_changed,
    stage_status_changed,
    triage_changed,
)

from . import messages
from .config import session_link, slack_config

log = logging.getLogger(__name__)


def connect() -> None:
    """Called once from the app's ready()."""
    session_status_changed.connect(on_session_status, dispatch_uid="tarsy.slack.session")
    stage_status_changed.connect(on_stage_status, dispatch_uid="tarsy.slack.stage")
    alert_attached.connect(on_alert_attached, dispatch_uid="tarsy.slack.attached")
    alert_resolved.connect(on_alert_resolved, dispatch_uid="tarsy.slack.resolved")
    triage_changed.connect(on_triage_changed, dispatch_uid="tarsy.slack.triage")
    action_changed.connect(on_action_changed, dispatch_uid="tarsy.slack.action")


def _record(session_id: Any, write: Callable[[str], object], *, needs_people: bool = False) -> None:
    """`needs_people`: shown even for a proactive check's run still under way (someone must decide)."""
    config = slack_config()
    if config is None:
        return
    row: Mapping[str, Any] = AlertSession.all_objects.filter(id=session_id).values(
        "chain_id", "check_name", "check_result", "status").first() or {}
    if _quiet_check(row) and not needs_people:
        return
    try:
        with transaction.atomic():  # a savepoint inside the sender's transaction
            write(config.channel_for(row.get("chain_id") or ""))
    except DatabaseError:
        log.exception("Slack: could not record a change of session %s", session_id)
        SLACK_DROPPED.labels("not_recorded").inc()
        return
    enact_on_commit([SlackDeliver(str(session_id))])


def _quiet_check(row: Mapping[str, Any]) -> bool:
    """A proactive check's run says nothing in Slack until it ends with a problem of its own: a healthy run
    closes quietly, and a repeat of an open problem shows in that problem's thread (tarsy.services.checks)."""
    if not row.get("check_name"):
        return False
    return row.get("status") not in TERMINAL_SESSION_STATUSES or row.get("check_result") in (
        CheckResult.HEALTHY, CheckResult.DUPLICATE)


def _shown(session: AlertSession) -> bool:
    """The session has (or is getting) a message: it started, or a repeat of its alert opened its thread while
    it was queued. A session queued and cancelled unseen has nothing to show."""
    return slack_config() is not None and (session.started_at is not None
                                           or SlackThread.objects.filter(session_id=session.id).exists())


def on_session_status(sender, session: AlertSession, **kwargs) -> None:
    """Claimed, cancelling, ended: the message shows it; the end also goes into the thread."""
    if not _shown(session):
        return

    def write(channel: str) -> None:
        slack_service.slack_thread_touch(session_id=session.id, channel=channel)
        if session.is_terminal:
            text, blocks = messages.summary_message(session, url=session_link(session.id))
            slack_service.slack_post_add(session_id=session.id, channel=channel, kind=SlackPostKind.SUMMARY,
                                         text=text, blocks=blocks)

    _record(session.id, write)


def on_stage_status(sender, stage: Stage, **kwargs) -> None:
    """A chain stage started or closed: the message shows the current stage. A chat stage closed: its
    question and answer go into the thread."""
    if stage.kind != StageKind.CHAT:
        _record(stage.session_id, lambda channel: slack_service.slack_thread_touch(
            session_id=stage.session_id, channel=channel))
        return
    if stage.completed_at is None or stage.chat_message is None:
        return
    ok = stage.status == ExecStatus.COMPLETED
    text, blocks = messages.answer_message(question=stage.chat_message.content,
                                           answer=stage.final_analysis if ok else stage.error_message, ok=ok,
                                           url=session_link(stage.session_id))
    _record(stage.session_id, lambda channel: slack_service.slack_post_add(
        session_id=stage.session_id, channel=channel, kind=SlackPostKind.ANSWER, text=text, blocks=blocks))


def on_alert_attached(sender, session: AlertSession, data: str, kind: str, **kwargs) -> None:
    """A repeat of the alert, or a related one, joined the session: say so in its thread — at most one such
    reply per `update_interval`, the others merged into it (a storm must not flood the channel)."""
    post_kind = SlackPostKind.OCCURRENCE if kind == "occurrence" else SlackPostKind.RELATED
    url = session_link(session.id)
    _record(session.id, lambda channel: slack_service.slack_post_merge(
        session_id=session.id, channel=channel, kind=post_kind,
        render=lambda repeats: messages.attached_message(kind=post_kind, data=data, url=url, repeats=repeats)))


def on_alert_resolved(sender, session: AlertSession, text: str, **kwargs) -> None:
    """The source resolved the alert: say so in the session's thread (a queued session it cancels usually has
    none)."""
    if not _shown(session):
        return
    body, blocks = messages.resolved_message(text=text, url=session_link(session.id))
    _record(session.id, lambda channel: slack_service.slack_post_add(
        session_id=session.id, channel=channel, kind=SlackPostKind.RESOLVED, text=body, blocks=blocks))


def on_triage_changed(sender, session: AlertSession, action: str, actor: str, note: str, **kwargs) -> None:
    """Someone claimed, resolved, … the session (in Slack or the dashboard): the message shows its triage state
    and the buttons that state allows, and the thread says who did what — the channel sees the hand-over."""
    if not _shown(session):
        return
    text, blocks = messages.triage_message(action=action, actor=actor, session=session, note=note,
                                           url=session_link(session.id))

    def write(channel: str) -> None:
        slack_service.slack_thread_touch(session_id=session.id, channel=channel)
        slack_service.slack_post_add(session_id=session.id, channel=channel, kind=SlackPostKind.TRIAGE, text=text,
                                     blocks=blocks)

    _record(session.id, write)


def on_action_changed(sender, proposal: ActionProposal, transition: str, **kwargs) -> None:
    """An action proposal goes into the thread with its Approve / Reject buttons (the thread starts if the session
    has none yet); once decided the same reply shows who decided, when and why instead of the buttons, and once
    it ran how it went, which also gets a reply of its own."""
    url, ref = session_link(proposal.session_id), messages.action_ref(proposal.id)

    def write(channel: str) -> None:
        text, blocks = messages.action_message(proposal, agent=proposal.execution.agent_name, url=url)
        if transition == "proposed" or not slack_service.slack_post_edit(
                session_id=proposal.session_id, ref=ref, text=text, blocks=blocks, now=timezone.now()):
            slack_service.slack_post_add(session_id=proposal.session_id, channel=channel, kind=SlackPostKind.ACTION,
                                         text=text, blocks=blocks, ref=ref)  # proposed before Slack was set up
        if transition == "executed":
            body, outcome = messages.action_outcome_message(proposal, url=url)
            slack_service.slack_post_add(session_id=proposal.session_id, channel=channel, kind=SlackPostKind.ACTION,
                                         text=body, blocks=outcome)

    _record(proposal.session_id, write, needs_people=True)
