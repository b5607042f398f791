"""Deciding action proposals from Slack: the Approve / Reject buttons on a proposal in a session's thread, the
Reject form (a modal asking why), and `/tarsy approve <action> [comment]`, `/tarsy reject <action> <comment>`.

Each decision is tarsy.pipeline.actions.decisions.action_decide as the member's TARSy identity (tarsy.slack.actors)
with that user's groups: the approver rule, the 409 of a decided or expired proposal and the wake of the execution
are its own. What the channel sees afterwards — the proposal shown decided, in place of its buttons — follows from the
action_changed signal, as for a decision in the API. A refusal answers only the member: an ephemeral message for
a click, the command's reply, an error under the form's comment field."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from tarsy.errors import Conflict, Forbidden, NotFound, ServiceError, ValidationFailed
from tarsy.models import ACTION_MAX_COMMENT_CHARS, ActionProposal
from tarsy.pipeline.actions.decisions import action_decide, may_decide
from tarsy.services import actions as actions_service

from .actors import actor_groups, slack_actor
from .client import SlackGateway, SlackUnavailable
from .config import session_link, slack_config
from .inbound import SESSION_ID_RE
from .messages import ACTION_APPROVE, ACTION_BLOCK_PREFIX, ACTION_REJECT, arguments_fit, escape
from .payloads import MalformedAction, channel_of, field, member

log = logging.getLogger(__name__)

REJECT_VIEW = "action_reject"  # the Reject form's callback_id
COMMENT = "comment"  # the form's comment input: its block_id and action_id


@dataclass(frozen=True)
class DecisionClick:
    """A click on a proposal's Approve or Reject button, as read from Slack's payload."""

    proposal_id: str
    approve: bool
    user_id: str
    user_name: str
    channel: str
    trigger_id: str


def _proposal_id(text: str) -> str:
    found = SESSION_ID_RE.fullmatch(text)
    if found is None:
        raise MalformedAction("an action's button or form names its proposal (a UUID)")
    return found.group(0).lower()


def read_click(payload: dict[str, Any]) -> DecisionClick | None:
    """The decision click in a block_actions payload; None for another button (triage, the link)."""
    clicked = payload.get("actions")
    first = clicked[0] if isinstance(clicked, list) and clicked else None
    action_id = field(first, "action_id")
    if action_id not in (ACTION_APPROVE, ACTION_REJECT):
        return None
    block_id = str(field(first, "block_id") or "")
    if not block_id.startswith(ACTION_BLOCK_PREFIX):
        raise MalformedAction("an action button's block names its proposal (`action:<id>`)")
    user_id, user_name = member(payload)
    return DecisionClick(proposal_id=_proposal_id(block_id.removeprefix(ACTION_BLOCK_PREFIX)),
                         approve=action_id == ACTION_APPROVE, user_id=user_id, user_name=user_name,
                         channel=channel_of(payload), trigger_id=str(payload.get("trigger_id") or ""))


def refusal(verb: str, exc: ServiceError, identity: str) -> str:
    """Why nothing was decided, for the member who tried; a refused approver is told who they act as, since the
    fix is often their mapping (slack.users)."""
    if isinstance(exc, Forbidden) and identity:
        return f"Cannot {verb}: {exc.message}; you act as {identity}."
    if isinstance(exc, Forbidden):
        return f"Cannot {verb}: {exc.message}."
    if isinstance(exc, NotFound):
        return f"TARSy has no such action: {exc.message}."
    return f"Cannot {verb}: {exc.message}. Nothing changed."


def _decide(proposal_id: str, *, approve: bool, identity: str, comment: str) -> ActionProposal:
    if len(comment) > ACTION_MAX_COMMENT_CHARS:
        raise ValidationFailed(f"the comment is longer than {ACTION_MAX_COMMENT_CHARS} characters")
    if approve:
        _shown_whole(actions_service.action_get(proposal_id=proposal_id))
    return action_decide(proposal_id=proposal_id, approve=approve, identity=identity,
                         groups=actor_groups(identity), comment=comment)


def _shown_whole(proposal: ActionProposal) -> None:
    """Slack approves only what it shows whole (tarsy.slack.messages.arguments_fit), also from a message posted
    before, or a command typed without reading: longer arguments are decided in the dashboard."""
    if not arguments_fit(proposal):
        link = session_link(proposal.session_id)
        raise Conflict("its arguments are too long to show in Slack; read them and decide in the dashboard"
                       + (f" ({link})" if link else ""))


def _may_reject(proposal_id: str, identity: str) -> ActionProposal:
    """Before the form opens: the member may decide and the proposal still waits (the decision checks again)."""
    if not may_decide(identity, actor_groups(identity)):
        raise Forbidden("only the configured approvers (actions.approvers) may decide actions")
    proposal = actions_service.action_get(proposal_id=proposal_id)
    actions_service.action_check_decidable(proposal)
    return proposal


def click(event: DecisionClick) -> None:
    """Approve at once (the button asked to confirm), or open the Reject form; a refusal is told ephemerally."""
    config = slack_config()
    if config is None:
        return
    gateway = SlackGateway(config, interactive=True)
    verb, identity = "approve" if event.approve else "reject", ""
    try:
        identity = slack_actor(user_id=event.user_id, user_name=event.user_name, gateway=gateway)
        if event.approve:
            _decide(event.proposal_id, approve=True, identity=identity, comment="")
            return
        proposal = _may_reject(event.proposal_id, identity)
    except ServiceError as exc:
        _tell(gateway, event, refusal(verb, exc, identity))
        return
    try:
        gateway.open_view(trigger_id=event.trigger_id, view=reject_view(proposal))
    except SlackUnavailable as exc:
        log.warning("Slack: could not open the Reject form for %s: %s", event.user_id, exc)
        _tell(gateway, event, f"Could not open the Reject form; reject with `/tarsy reject {event.proposal_id} "
                              "<why>` instead.")


def _tell(gateway: SlackGateway, event: DecisionClick, text: str) -> None:
    if not event.channel:
        return
    try:
        gateway.post_ephemeral(channel=event.channel, user=event.user_id, text=escape(text))
    except SlackUnavailable as exc:  # the proposal's message still shows its real state
        log.warning("Slack: could not tell %s about action %s: %s", event.user_id, event.proposal_id, exc)


def reject_view(proposal: ActionProposal) -> dict[str, Any]:
    """The Reject form: why, kept with the decision and shown in the thread."""
    return {
        "type": "modal", "callback_id": REJECT_VIEW,
        "private_metadata": str(proposal.id),
        "title": {"type": "plain_text", "text": "Reject action"},
        "submit": {"type": "plain_text", "text": "Reject"}, "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": (
                f"Reject `{escape(proposal.server)}.{escape(proposal.tool)}`? It does not run; the agent concludes "
                "without acting.")}},
            {"type": "input", "block_id": COMMENT, "label": {"type": "plain_text", "text": "Why"},
             "element": {"type": "plain_text_input", "action_id": COMMENT, "multiline": True,
                         "max_length": ACTION_MAX_COMMENT_CHARS}},
        ],
    }


def submission(payload: dict[str, Any]) -> dict[str, Any] | None:
    """A submitted Reject form: None closes it (rejected), else the errors shown under its comment field."""
    view = payload.get("view")
    if field(view, "callback_id") != REJECT_VIEW:
        return None
    proposal_id = _proposal_id(str(field(view, "private_metadata") or ""))
    comment = field(field(field(field(view, "state"), "values"), COMMENT), COMMENT)
    if not isinstance(field(comment, "value"), str):
        raise MalformedAction("a Reject form carries `view.state.values.comment.comment.value`")
    user_id, user_name = member(payload)
    config = slack_config()
    if config is None:
        return None
    identity = ""
    try:
        identity = slack_actor(user_id=user_id, user_name=user_name, gateway=SlackGateway(config, interactive=True))
        _decide(proposal_id, approve=False, identity=identity, comment=comment["value"].strip())
    except ServiceError as exc:
        return {"response_action": "errors", "errors": {COMMENT: refusal("reject", exc, identity)}}
    return None


def slash_command(*, text: str, user_id: str, user_name: str) -> str:
    """`/tarsy approve <action> [comment]`, `/tarsy reject <action> <comment>`: the reply only the member sees."""
    verb, _, rest = text.strip().partition(" ")
    verb = verb.lower()
    target, _, comment = rest.strip().partition(" ")
    found, comment = SESSION_ID_RE.search(target), comment.strip()
    config = slack_config()
    if config is None or found is None or (verb == "reject" and not comment):
        return ("Usage: `/tarsy approve <action ID> [comment]` or `/tarsy reject <action ID> <why>` (the ID is on "
                "the proposal in the investigation's thread).")
    identity = ""
    try:
        identity = slack_actor(user_id=user_id, user_name=user_name, gateway=SlackGateway(config, interactive=True))
        proposal = _decide(found.group(0).lower(), approve=verb == "approve", identity=identity, comment=comment)
    except ServiceError as exc:
        return escape(refusal(verb, exc, identity))
    link = session_link(proposal.session_id)
    where = f" (<{link}|its session>)" if link else ""
    return (f"{'Approved' if verb == 'approve' else 'Rejected'} action `{proposal.id}` "
            f"(`{escape(proposal.server)}.{escape(proposal.tool)}`){where} as {escape(identity)}; its thread says so.")
