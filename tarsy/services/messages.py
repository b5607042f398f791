"""The LLM conversation of an execution, stored as Message rows and rebuilt for every step."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from agents.llm.types import ConversationMessage, ToolCall
from tarsy.models import Message


def message_to_conversation(row: Message) -> ConversationMessage:
    return ConversationMessage(
        role=row.role,
        content=row.content,
        tool_calls=[ToolCall.model_validate(tc) for tc in row.tool_calls or []],
        tool_call_id=row.tool_call_id or None,
        tool_name=row.tool_name or None,
        provider_state=row.provider_state,
    )


def messages_with_next_sequence(*, execution_id: Any) -> tuple[list[ConversationMessage], int]:
    """The conversation and the sequence number the next appended message takes (one query for both)."""
    rows = list(Message.objects.filter(execution_id=execution_id))
    return [message_to_conversation(m) for m in rows], max((m.sequence_number for m in rows), default=0) + 1


@transaction.atomic
def messages_append(
    *, session_id: Any, execution_id: Any, iteration: int, messages: list[ConversationMessage],
    start: int | None = None,
) -> int:
    """Append in order from `start` (looked up when not given); returns the next free sequence number."""
    if start is None:
        start = (Message.objects.filter(execution_id=execution_id).aggregate(m=Max("sequence_number"))["m"]
                 or 0) + 1
    Message.objects.bulk_create(
        [
            Message(
                session_id=session_id,
                execution_id=execution_id,
                iteration=iteration,
                sequence_number=start + i,
                role=msg.role,
                content=msg.content,
                tool_calls=[tc.model_dump() for tc in msg.tool_calls],
                tool_call_id=msg.tool_call_id or "",
                tool_name=msg.tool_name or "",
                provider_state=msg.provider_state,
            )
            for i, msg in enumerate(messages)
        ]
    )
    return start + len(messages)
