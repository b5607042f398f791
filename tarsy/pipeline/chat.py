"""Follow-up chat: a question on a finished session starts a chat stage run like any other stage."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents.mcp.masking.boundary import mask_text
from tarsy.config import get_config
from tarsy.models import (
    TERMINAL_EXEC_STATUSES,
    AlertSession,
    Chat,
    ChatUserMessage,
    SessionStatus,
    Stage,
    StageKind,
)
from tarsy.services import timeline
from tarsy.services.errors import Conflict, ValidationFailed
from tarsy.services.sessions import session_get
from tarsy.streaming.publisher import publish

from .stages import stage_start_chat

MAX_CHAT_MESSAGE_CHARS = 100_000  # ANCHORS: chat message limit
CHATTABLE_STATUSES = (SessionStatus.COMPLETED, SessionStatus.FAILED, SessionStatus.TIMED_OUT)


def chat_available(session: AlertSession) -> bool:
    config = get_config()
    chain = config.chains.get(session.chain_id)
    return bool(chain and chain.chat.enabled and session.status in CHATTABLE_STATUSES)


def chat_message_payload(*, session_id: Any, message_id: Any, role: str, content: str,
                         stage_id: int | None, status: str) -> dict[str, Any]:
    return {"session_id": str(session_id), "message_id": str(message_id), "role": role, "content": content,
            "stage_id": stage_id, "status": status}


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
        session = AlertSession.objects.select_for_update().get(id=session.id)
        if not chat_available(session):
            raise Conflict(f"chat is not available for a {session.status} session", {"status": session.status})
        if Stage.objects.filter(session=session, kind=StageKind.CHAT).exclude(
                status__in=TERMINAL_EXEC_STATUSES).exists():
            raise Conflict("a chat reply is still running for this session")
        chat, _ = Chat.objects.get_or_create(session=session, defaults={"created_by": author})
        message = ChatUserMessage.objects.create(chat=chat, content=content, author=author)
        stage = stage_start_chat(session, message)
        timeline.timeline_event_create(session_id=session.id, stage_id=stage.id, event_type="user_question",
                                       content=content, metadata={"author": author, "message_id": str(message.id)})
        publish("chat.message", chat_message_payload(session_id=session.id, message_id=message.id, role="user",
                                                     content=content, stage_id=stage.id, status="submitted"),
                session_id=session.id)
    return message, stage


def chat_stage_finished(stage: Stage) -> None:
    if stage.chat_message_id is None:
        return
    publish("chat.message", chat_message_payload(
        session_id=stage.session_id, message_id=stage.chat_message_id, role="assistant",
        content=stage.final_analysis or stage.error_message, stage_id=stage.id, status=stage.status,
    ), session_id=stage.session_id)


def chat_history(session: AlertSession, before: ChatUserMessage | None = None) -> list[tuple[str, str]]:
    """Earlier answered (question, answer) pairs, oldest first."""
    stages = Stage.objects.filter(session=session, kind=StageKind.CHAT, chat_message__isnull=False,
                                  status="completed").select_related("chat_message").order_by("index")
    pairs = []
    for stage in stages:
        if before is not None and stage.chat_message_id == before.id:
            break
        pairs.append((stage.chat_message.content, stage.final_analysis))
    return pairs
