"""LLM records as they were sent: their long texts, stored once per session, put back in place."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tarsy.models import InteractionText, LLMInteraction

MISSING = "[text not stored]"


def _refs(row: LLMInteraction) -> Iterable[tuple[Any, str]]:
    for message in row.conversation if isinstance(row.conversation, list) else []:
        if isinstance(message, dict) and message.get("content_ref"):
            yield row.session_id, message["content_ref"]


def llm_conversations(rows: list[LLMInteraction]) -> list[LLMInteraction]:
    """The rows with each `content_ref` of their conversations replaced by its text (one query for all rows;
    none when no row names a text). Rows are changed in memory only."""
    refs = {ref for row in rows for ref in _refs(row)}
    if not refs:
        return rows
    stored = InteractionText.objects.filter(session_id__in={session for session, _ in refs},
                                            digest__in={digest for _, digest in refs})
    texts: dict[tuple[str, Any], str] = {(str(session_id), digest): text for session_id, digest, text
                                         in stored.values_list("session_id", "digest", "text")}
    for row in rows:
        row.conversation = [_restored(message, texts.get((str(row.session_id), message.get("content_ref"))))
                            if isinstance(message, dict) and message.get("content_ref") else message
                            for message in row.conversation]
    return rows


def _restored(message: dict[str, Any], text: str | None) -> dict[str, Any]:
    restored = {key: value for key, value in message.items() if key != "content_ref"}
    restored["content"] = MISSING if text is None else text
    return restored
