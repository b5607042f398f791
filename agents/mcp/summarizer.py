"""LLM summarization of oversized tool results, recorded like any other LLM interaction.

A huge tool output would crowd the investigation out of the context window; the
summary keeps what matters for the investigation so far, and the raw (masked)
result stays in the MCP interaction record.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.context import Recorder
from agents.llm.recorded import LLMTarget, call_with_fallback
from agents.llm.types import LLMRequest
from agents.prompts.builder import summarization_messages


class SummarizationError(Exception):
    """The summarization call failed or returned nothing; the caller falls back to truncation."""


class ResultSummarizer:
    """Summarizes one tool result with the execution's LLM provider, through the one recorded call."""

    def __init__(self, *, target: LLMTarget, recorder: Recorder, investigation_so_far: Callable[[], str],
                 agent_name: str = "", execution_id: str = "", session_id: str = "", iteration: int = 0,
                 deadline: float | None = None, fallbacks: tuple[LLMTarget, ...] = ()) -> None:
        self._target = target
        self._fallbacks = fallbacks
        self._recorder = recorder
        self._investigation_so_far = investigation_so_far
        self._agent_name = agent_name
        self._execution_id = execution_id
        self._session_id = session_id  # the session whose pseudonyms the summarized result is sent under
        self._iteration = iteration
        self._deadline = deadline

    def summarize(self, server: str, tool: str, result: str, max_tokens: int) -> str:
        """Return the summary text; raise SummarizationError (masked text) when the call failed."""
        messages = summarization_messages(server=server, tool=tool, result=result,
                                          investigation_so_far=self._investigation_so_far(), max_tokens=max_tokens)
        request = LLMRequest(
            messages=messages, tools=[], provider=self._target.config, provider_name=self._target.name,
            agent_name=self._agent_name, execution_id=self._execution_id, session_id=self._session_id,
            interaction_type="summarization",
            iteration=self._iteration, max_output_tokens=max_tokens, deadline=self._deadline,
        )
        self._recorder.llm_call_started("summarization", self._target.name, self._target.config.model)
        self._recorder.flush()  # the tool's result shows while it is summarized, and the call's row
        call = call_with_fallback(request, (self._target, *self._fallbacks),
                                  record=self._recorder.record_llm_interaction)
        if call.error is not None:
            raise SummarizationError(f"summarization LLM call failed: {call.error.message}")
        return call.response.text.strip()
