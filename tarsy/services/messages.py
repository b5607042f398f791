"""The LLM conversation of an execution, stored as Message rows and rebuilt for every step."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents.llm.types import ConversationMessage
from tarsy.models import Message

_CONVERSATION_FIELDS = ("sequence_number", "role", "content", "tool_calls", "tool_call_id", "tool_name",
                       "provider_state")


def messages_with_next_sequence(*, execution_id: Any) -> tuple[list[ConversationMessage], int]:
    """The conversation and the sequence number the next appended message takes (one query for both).
    Read as plain values: every step reads the whole conversation, model instances would be built for nothing."""
    rows = Message.objects.filter(execution_id=execution_id).order_by("sequence_number").values_list(
        *_CONVERSATION_FIELDS)
    return _conversation(rows)


def _conversation(rows: Iterable[tuple]) -> tuple[list[ConversationMessage], int]:
    conversation, last = [], 0
    for sequence, role, content, tool_calls, tool_call_id, tool_name, provider_state in rows:
        conversation.append(ConversationMessage(
            role=role, content=content, tool_calls=tool_calls or [], tool_call_id=tool_call_id or None,
            tool_name=tool_name or None, provider_state=provider_state))
        last = sequence
    return conversation, last + 1


def message_rows(
    *, session_id: Any, execution_id: Any, iteration: int, messages: list[ConversationMessage], start: int,
) -> list[Message]:
    """Unsaved rows, numbered from `start` (the writer knows it: see messages_with_next_sequence)."""
    return [
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


def messages_discard_iteration(*, execution_id: Any, iteration: int) -> None:
    """An interrupted attempt's messages: the re-run writes the iteration's messages again."""
    Message.objects.filter(execution_id=execution_id, iteration=iteration).delete()


def messages_drop_provider_state(*, execution_id: Any) -> None:
    """The conversation moved to a provider of another family: state only the earlier one could replay goes."""
    Message.objects.filter(execution_id=execution_id, provider_state__isnull=False).update(provider_state=None)
