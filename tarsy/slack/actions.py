"""Triage from Slack: the buttons on a session's message, and `/tarsy claim|ack|resolve|reopen <session>`
(decisions on proposed actions are tarsy.slack.approvals').

Both call tarsy.services.triage as the acting member's TARSy identity (tarsy.slack.actors): its rules decide,
nothing here repeats them. What the channel sees afterwards — the thread's "Claimed by …" and the message's new
buttons — follows from the triage_changed signal, as for an action in the dashboard. A refusal (someone else was
faster, an unknown session) answers only the one who acted: an ephemeral message for a click, the command's
reply for a slash command."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from tarsy.errors import Conflict, NotFound, ServiceError
from tarsy.models import Resolution, TriageStatus
from tarsy.services import triage as triage_service

from .actors import slack_actor
from .client import SlackGateway, SlackUnavailable
from .config import session_link, slack_config
from .inbound import SESSION_ID_RE
from .messages import TRIAGE_ACTION_IDS, TRIAGE_BLOCK_PREFIX, escape
from .payloads import MalformedAction, channel_of, field, member

log = logging.getLogger(__name__)

VERBS = {"claim": "claim", "ack": "acknowledge", "acknowledge": "acknowledge", "resolve": "resolve",
         "reopen": "reopen"}
DONE = {"claim": "Claimed", "acknowledge": "Acknowledged (resolved as dismissed)", "resolve": "Resolved",
        "reopen": "Reopened"}
RESOLUTIONS = ", ".join(f"`{value}`" for value in Resolution.values)
HELP = ("Usage:\n"
        "• `/tarsy claim <session ID or link> [note]`: take the investigation\n"
        "• `/tarsy ack <session> [note]`: seen, nothing to do (resolved as dismissed)\n"
        f"• `/tarsy resolve <session> <resolution> [note]`: resolution is one of {RESOLUTIONS}\n"
        "• `/tarsy reopen <session> [note]`\n"
        "• `/tarsy ask <session> <question>`: a follow-up question, answered in the thread\n"
        "• `/tarsy approve <action ID> [comment]`, `/tarsy reject <action ID> <why>`: decide a proposed action "
        "(approvers only)\n"
        "The buttons on an investigation's message do the same. Slack does not tell TARSy which thread a "
        "command was typed in, so commands name the session.")


@dataclass(frozen=True)
class Click:
    """One click on a triage button (or a resolution picked), as read from Slack's payload."""

    session_id: str
    action: str
    resolution: str
    user_id: str
    user_name: str
    channel: str


def read_click(payload: dict[str, Any]) -> Click | None:
    """The triage click in a block_actions payload; None for another action (the link button sends one too)."""
    actions = payload.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
        raise MalformedAction("a block_actions payload carries `actions` (objects)")
    user_id, user_name = member(payload)
    action = TRIAGE_ACTION_IDS.get(str(field(actions[0], "action_id") or ""))
    if action is None:
        return None
    block_id = str(field(actions[0], "block_id") or "")
    found = SESSION_ID_RE.fullmatch(block_id.removeprefix(TRIAGE_BLOCK_PREFIX))
    if not block_id.startswith(TRIAGE_BLOCK_PREFIX) or found is None:
        raise MalformedAction("a triage action's block names its session (`triage:<session ID>`)")
    resolution = ""
    if action == "resolve":
        resolution = field(field(actions[0], "selected_option"), "value")
        if not isinstance(resolution, str) or not resolution:
            raise MalformedAction("a resolve action carries `selected_option.value`")
    return Click(session_id=found.group(0).lower(), action=action, resolution=resolution, user_id=user_id,
                 user_name=user_name, channel=channel_of(payload))


def refusal(action: str, exc: ServiceError) -> str:
    """Why nothing changed, in the words of someone on call."""
    detail = exc.detail if isinstance(exc.detail, dict) else {}
    if isinstance(exc, NotFound):
        return f"TARSy has no such session: {exc.message}."
    if isinstance(exc, Conflict) and "triage_status" in detail:
        owner = detail.get("assignee") or ""
        if action == "claim" and owner:
            return f"Already claimed by {owner}: nothing changed."
        state = TriageStatus(detail["triage_status"]).label.lower()
        return f"Cannot {action}: this investigation is already {state}" + (f" ({owner})" if owner else "") + "."
    if isinstance(exc, Conflict):
        return f"Cannot {action} yet: {exc.message}."
    return f"Cannot {action}: {exc.message}."


def click(event: Click) -> None:
    """Act on a click; a refusal is told to the member who clicked, in an ephemeral message."""
    config = slack_config()
    if config is None:
        return
    gateway = SlackGateway(config, interactive=True)
    try:
        actor = slack_actor(user_id=event.user_id, user_name=event.user_name, gateway=gateway)
        triage_service.triage_act(session_id=event.session_id, actor=actor, action=event.action,
                                  resolution=event.resolution)
    except ServiceError as exc:
        if not event.channel:
            return
        try:
            gateway.post_ephemeral(channel=event.channel, user=event.user_id, text=escape(refusal(event.action, exc)))
        except SlackUnavailable as error:  # the message still shows the session's real state
            log.warning("Slack: could not tell %s why %s was refused: %s", event.user_id, event.action, error)


def slash_command(*, text: str, user_id: str, user_name: str) -> str:
    """`/tarsy claim|ack|resolve|reopen <session> …`: the reply shown only to the one who typed it."""
    verb, _, rest = text.strip().partition(" ")
    action = VERBS.get(verb.lower())
    target, _, rest = rest.strip().partition(" ")
    found = SESSION_ID_RE.search(target)
    config = slack_config()
    if action is None or found is None or config is None:
        return HELP
    resolution = ""
    if action == "resolve":
        word, _, rest = rest.strip().partition(" ")
        resolution = word.lower().replace("-", "_")
        if resolution not in Resolution.values:
            return f"Resolve as one of {RESOLUTIONS}: `/tarsy resolve <session> <resolution> [note]`."
    session_id = found.group(0).lower()
    try:
        actor = slack_actor(user_id=user_id, user_name=user_name, gateway=SlackGateway(config, interactive=True))
        session = triage_service.triage_act(session_id=session_id, actor=actor, action=action,
                                            resolution=resolution, note=rest.strip())
    except ServiceError as exc:
        return escape(refusal(action, exc))
    link = session_link(session.id)
    target = f"<{link}|{session.id}>" if link else f"`{session.id}`"
    return f"{DONE[action]} {target} as {escape(actor)}; its thread says so."
