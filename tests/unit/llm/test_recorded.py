"""The record of a call cut off mid-stream keeps what was received, marked failed with why."""

from __future__ import annotations

import pytest

from agents.config.schema import LLMProviderConfig
from agents.context import LLMInteractionRecord
from agents.llm.recorded import recorded_call
from agents.llm.registry import LLMTarget
from agents.llm.types import Chunk, ConversationMessage, LLMRequest, TextChunk

REPLY = "Thought: the pod web-1 restarts because its memory limit is too low."


class CutOff:
    """Sees the stream as a controller does, and cuts it after `after` text chunks: by stopping it (a cancel)
    or by raising (the worker's time limit interrupting the call)."""

    def __init__(self, after: int, *, raising: bool = False) -> None:
        self.left, self.raising = after, raising

    def chunk(self, chunk: Chunk) -> str | None:
        if isinstance(chunk, TextChunk):
            self.left -= 1
        if self.left > 0:
            return None
        if self.raising:
            raise TimeoutError("time limit")
        return "cancelled"


def _call(observer: CutOff | None) -> list[LLMInteractionRecord]:
    config = LLMProviderConfig(type="scripted", script=[{"text": REPLY}], chunk_size=8)
    request = LLMRequest(messages=[ConversationMessage(role="user", content="why does web-1 restart?")],
                         provider=config, interaction_type="iteration")
    records: list[LLMInteractionRecord] = []
    try:
        recorded_call(request, LLMTarget.of("scripted", config), record=records.append, observer=observer)
    except TimeoutError:
        pass
    return records


@pytest.mark.parametrize(("raising", "error"), [(False, "stopped: cancelled"),
                                                (True, "LLM call interrupted by TimeoutError: time limit")])
def test_a_call_cut_off_mid_stream_keeps_the_text_received(raising, error):
    (record,) = _call(CutOff(2, raising=raising))
    assert (record.success, record.error_message) == (False, error)
    assert (record.conversation[-1]["role"], record.conversation[-1]["content"]) == ("assistant", REPLY[:16])


def test_a_whole_call_keeps_its_whole_reply():
    (whole,) = _call(None)
    assert (whole.success, whole.error_message, whole.conversation[-1]["content"]) == (True, "", REPLY)
