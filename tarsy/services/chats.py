"""Follow-up chat: a question on a finished session starts a chat stage run like any other stage."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents.mcp.masking.boundary import mask_text
from tarsy.config import get_config
from tarsy.errors import Conflict, ValidationFailed
from tarsy.models import AlertSession, Chat, ChatUserMessage, ExecStatus, SessionStatus, Stage, StageKind

from . import stages, timeline
from .events import publish
from .sessions import session_get

MAX_CHAT_MESSAGE_CHARS = 100_000  # bounds what one question adds to the prompt and the database
CHATTABLE_STATUSES = (SessionStatus.COMPLETED, SessionStatus.FAILED, SessionStatus.TIMED_OUT)


def chat_available(session: AlertSession) -> bool:
    """A finished (not cancelled) session of a chain with chat enabled takes follow-up questions."""
    chain = get_config().chains.get(session.chain_id)
    return bool(chain and chain.chat.enabled and session.status in CHATTABLE_STATUSES)


def chat_submit(*, session_id: Any, content: str, author: str) -> tuple[ChatUserMessage, Stage]:
    """One reply at a time per session: a question while another is being answered is refused (409)."""
    content = (content or "").strip()
    if not content:
        raise ValidationFailed("content is required", {"content": ["Must not be empty."]})
    if len(content) > MAX_CHAT_MESSAGE_CHARS:
        raise ValidationFailed("message too long", {"content": [f"At most {MAX_CHAT_MESSAGE_CHARS} characters."]})
    # Masked once, here: the stored question, its timeline event, the chat event and the chat prompt all use it.
    content = mask_text(content)
    with transaction.atomic():
        session = session_get(session_id=session_id)
        session = AlertSession.objects.select_for_update(no_key=True).get(id=session.id)
        if not chat_available(session):
            raise Conflict(_chat_refusal(session), {"status": session.status})
        if stages.stage_running_chat_exists(session_id=session.id):
            raise Conflict("a chat reply is still running for this session")
        chat, _ = Chat.objects.get_or_create(session=session, defaults={"created_by": author})
        message = ChatUserMessage.objects.create(chat=chat, content=content, author=author)
        stage = stages.stage_start_chat(session=session, message=message)
        timeline.timeline_event_create(session_id=session.id, stage_id=stage.id, event_type="user_question",
                                       content=content, metadata={"author": author, "message_id": str(message.id)})
        publish("chat.message", stages.chat_message_payload(
            session_id=session.id, message_id=message.id, role="user", content=content, stage_id=stage.id,
            status="submitted"), session_id=session.id)
    return message, stage


def _chat_refusal(session: AlertSession) -> str:
    """Why a question cannot be asked, in words ("the session is in progress", not "a in_progress session")."""
    if session.status in CHATTABLE_STATUSES:
        return "chat is not enabled for this session's chain"
    return f"chat is not available: the session is {session.get_status_display().lower()}"


def chat_history(*, session_id: Any, before_message_id: Any = None) -> list[tuple[str, str]]:
    """Earlier answered (question, answer) pairs, oldest first; up to `before_message_id` when given."""
    answered = Stage.objects.filter(session_id=session_id, kind=StageKind.CHAT, chat_message__isnull=False,
                                    status=ExecStatus.COMPLETED).select_related("chat_message").order_by("index")
    pairs = []
    for stage in answered:
        if before_message_id is not None and stage.chat_message_id == before_message_id:
            break
        pairs.append((stage.chat_message.content, stage.final_analysis))
    return pairs
