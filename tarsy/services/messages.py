"""The LLM conversation of an execution, stored as Message rows and rebuilt for every step."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Aggregate, F, Func, JSONField, OuterRef, Subquery
from django.db.models.functions import JSONObject

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


class _JSONArrayAgg(Aggregate):
    """The group's values as one JSON array: json_group_array on SQLite, jsonb_agg on PostgreSQL."""

    function = "JSON_GROUP_ARRAY"
    output_field = JSONField()

    def as_postgresql(self, compiler, connection, **extra_context):
        return super().as_sql(compiler, connection, function="JSONB_AGG", **extra_context)


class _Nested(Func):
    """A JSON column as a JSON value inside JSON_OBJECT (SQLite would embed its text as a string)."""

    template = "%(expressions)s"
    output_field = JSONField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return super().as_sql(compiler, connection, template="JSON(%(expressions)s)", **extra_context)


def messages_of_outer_execution() -> Subquery:
    """The conversation of the outer query's execution (`OuterRef("id")`) as one value: a read of the execution
    (the iteration's claim) brings it without a statement of its own. Decoded by `conversation_decode`."""
    rows = (Message.objects.filter(execution_id=OuterRef("id")).order_by().values("execution_id")
            .annotate(rows=_JSONArrayAgg(JSONObject(
                sequence_number=F("sequence_number"), role=F("role"), content=F("content"),
                tool_calls=_Nested(F("tool_calls")), tool_call_id=F("tool_call_id"), tool_name=F("tool_name"),
                provider_state=_Nested(F("provider_state"))))))
    return Subquery(rows.values("rows"), output_field=JSONField())


def conversation_decode(rows: list[dict[str, Any]] | None) -> tuple[list[ConversationMessage], int]:
    """`messages_of_outer_execution`'s value as `messages_with_next_sequence` returns it."""
    ordered = sorted(rows or [], key=lambda row: row["sequence_number"])
    return _conversation((row["sequence_number"], row["role"], row["content"], row["tool_calls"],
                          row["tool_call_id"], row["tool_name"], row["provider_state"]) for row in ordered)


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
