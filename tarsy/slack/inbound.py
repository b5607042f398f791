"""Questions asked from Slack: a mention in a session's thread, or `/tarsy ask <session> <question>`.

A question becomes a follow-up chat like one asked in the dashboard (tarsy.services.chats); its answer
reaches the thread through the chat stage's close (tarsy.slack.receivers), asked as the member's TARSy identity
(tarsy.slack.actors: a member it cannot map asks nothing unless allowed). A question that cannot be taken is
answered with the reason: in the thread for a mention, in the command's reply for a slash command."""

from __future__ import annotations

import re

from django.db import transaction

from tarsy.decisions import SlackDeliver, enact_on_commit
from tarsy.errors import ServiceError, ServiceUnavailable
from tarsy.models import SlackPostKind
from tarsy.services import chats
from tarsy.services import slack as slack_service

from . import messages
from .actors import slack_actor
from .client import SlackGateway
from .config import session_link, slack_config

MENTION_RE = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
SESSION_ID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
USAGE = "Usage: `/tarsy ask <session ID or link> <question>`, or mention TARSy in an investigation's thread."


def _refusal(exc: ServiceError) -> str:
    if exc.status_code == 409:
        return f"TARSy cannot take this question now: {exc.message}. Ask again once the investigation or the " \
               f"previous answer has finished."
    return f"TARSy cannot take this question: {exc.message}."


def mention_in_thread(*, channel: str, thread_ts: str, text: str, user: str) -> bool:
    """An app mention: a question when it is a reply in a session's thread. False when the thread is not one
    of TARSy's (ignored)."""
    thread = slack_service.slack_thread_for_message(channel=channel, ts=thread_ts)
    if thread is None:
        return False
    question = MENTION_RE.sub("", text).strip()
    try:
        chats.chat_submit(session_id=thread.session_id, content=question, author=_asker(user, ""))
    except ServiceError as exc:
        text, blocks = messages.notice_message(_refusal(exc) if question else USAGE)
        with transaction.atomic():
            slack_service.slack_post_add(session_id=thread.session_id, channel=thread.channel,
                                         kind=SlackPostKind.NOTICE, text=text, blocks=blocks)
            enact_on_commit([SlackDeliver(str(thread.session_id))])
    return True


def _asker(user_id: str, user_name: str) -> str:
    """The member's TARSy identity (tarsy.slack.actors: UnmappedMember for one it cannot map)."""
    config = slack_config()
    if config is None:
        raise ServiceUnavailable("Slack is not configured")
    return slack_actor(user_id=user_id, user_name=user_name, gateway=SlackGateway(config, interactive=True))


def slash_command(*, text: str, user: str, user_name: str = "") -> str:
    """`/tarsy ask <session> <question>` (or help): the reply shown only to the one who typed it."""
    verb, _, rest = text.strip().partition(" ")
    if verb.lower() != "ask":
        return USAGE
    target, _, question = rest.strip().partition(" ")
    found = SESSION_ID_RE.search(target)
    if found is None or not question.strip():
        return USAGE
    session_id = found.group(0).lower()
    try:
        chats.chat_submit(session_id=session_id, content=question, author=_asker(user, user_name))
    except ServiceError as exc:
        return _refusal(exc)
    link = session_link(session_id)
    return "Question taken: the answer will be posted in the investigation's thread" + (f" and at {link}" if link
                                                                                        else "") + "."
