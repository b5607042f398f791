"""One LLM call through the pseudonyms: the request as the model may see it, the reply as people and tools need it.

`veil(request, provider)` is applied by agents.llm.recorded (the one place every LLM call passes) when the
provider pseudonymises: every message's text and tool-call arguments are replaced, so the stored interaction
records what the model saw; the reply's chunks are restored as they stream (a placeholder split across chunks is
held back until it is whole), so timeline, messages, analyses and tool calls carry real values. A placeholder the
model was not given is left as written: shown as such to people, and refused by the tool executor.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

from agents.config.schema import LLMProviderConfig
from agents.llm.types import Chunk, ConversationMessage, LLMRequest, TextChunk, ThinkingChunk, ToolCallChunk

from .policy import applies, session_pseudonyms
from .pseudonyms import Pseudonyms

PLACEHOLDER_MAX = 24  # `<` + kind (≤16) + `:` + number (≤6): a longer unclosed tail is no placeholder


@dataclass
class Veil:
    pseudonyms: Pseudonyms
    _held: dict[str, str] = field(default_factory=dict)  # chunk type → text waiting for a placeholder's end

    def request(self, request: LLMRequest) -> LLMRequest:
        return request.model_copy(update={"messages": [self._message(m) for m in request.messages]})

    def _message(self, message: ConversationMessage) -> ConversationMessage:
        calls = [c.model_copy(update={"arguments": self.pseudonyms.replace_value(c.arguments)})
                 for c in message.tool_calls]
        return message.model_copy(update={"content": self.pseudonyms.replace(message.content), "tool_calls": calls})

    def restore(self, chunk: Chunk) -> Iterator[Chunk]:
        """The chunk as people see it; text may be held back (and come out with a later chunk or `flush`)."""
        if isinstance(chunk, (TextChunk, ThinkingChunk)):
            text = self._held.pop(chunk.type, "") + chunk.text
            cut = _unfinished_tail(text)
            if cut < len(text):
                self._held[chunk.type] = text[cut:]
            if cut:
                yield chunk.model_copy(update={"text": self.pseudonyms.restore(text[:cut])})
        elif isinstance(chunk, ToolCallChunk):
            yield chunk.model_copy(update={"call": chunk.call.model_copy(
                update={"arguments": self.pseudonyms.restore_value(chunk.call.arguments)})})
        else:
            yield chunk

    def flush(self) -> Iterator[Chunk]:
        """Text still held when the stream ends."""
        for kind, text in self._held.items():
            restored = self.pseudonyms.restore(text)
            yield TextChunk(text=restored) if kind == "text" else ThinkingChunk(text=restored)
        self._held.clear()


def veil(request: LLMRequest, provider: LLMProviderConfig) -> Veil | None:
    """The call's veil when `provider` pseudonymises, with the session's mapping extended by what this request
    carries; None when it sees real values."""
    if not applies(provider):
        return None
    texts = [m.content for m in request.messages]
    texts.extend(json.dumps(c.arguments) for m in request.messages for c in m.tool_calls)
    return Veil(session_pseudonyms(request.session_id, texts))


def _unfinished_tail(text: str) -> int:
    """Where a possibly unfinished placeholder at the end of `text` starts (len(text) when there is none)."""
    start = text.rfind("<")
    if start < 0 or ">" in text[start:] or len(text) - start > PLACEHOLDER_MAX:
        return len(text)
    tail = text[start + 1:]
    kind, _, number = tail.partition(":")
    if (not kind or kind.replace("_", "").isalnum()) and (not number or number.isdigit()):
        return start
    return len(text)
