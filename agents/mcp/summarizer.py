"""LLM summarization of oversized tool results, recorded like any other LLM interaction.

A huge tool output would crowd the investigation out of the context window; the
summary keeps what matters for the investigation so far, and the raw (masked)
result stays in the MCP interaction record.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agents.config.schema import LLMProviderConfig
from agents.context import LLMInteractionRecord, Recorder
from agents.llm.base import Provider
from agents.llm.types import LLMRequest, LLMResponse
from agents.prompts.builder import summarization_messages

from .masking.boundary import mask_text


class SummarizationError(Exception):
    """The summarization call failed or returned nothing; the caller falls back to truncation."""


class ResultSummarizer:
    """Summarizes one tool result with the execution's LLM provider."""

    def __init__(self, *, llm: Provider, provider_name: str, provider_cfg: LLMProviderConfig, recorder: Recorder,
                 investigation_so_far: Callable[[], str], agent_name: str = "", execution_id: str = "",
                 iteration: int = 0, deadline: float | None = None) -> None:
        self._llm = llm
        self._provider_name = provider_name
        self._provider_cfg = provider_cfg
        self._recorder = recorder
        self._investigation_so_far = investigation_so_far
        self._agent_name = agent_name
        self._execution_id = execution_id
        self._iteration = iteration
        self._deadline = deadline

    def summarize(self, server: str, tool: str, result: str, max_tokens: int) -> str:
        """Return the summary text; raise SummarizationError on an error chunk or an empty reply."""
        messages = summarization_messages(server=server, tool=tool, result=result,
                                          investigation_so_far=self._investigation_so_far(), max_tokens=max_tokens)
        request = LLMRequest(
            messages=messages, tools=[], provider=self._provider_cfg, provider_name=self._provider_name,
            agent_name=self._agent_name, execution_id=self._execution_id, interaction_type="summarization",
            iteration=self._iteration, max_output_tokens=max_tokens, deadline=self._deadline,
        )
        self._recorder.flush()  # the tool's result shows while it is summarized
        started = time.monotonic()
        error = ""
        try:
            response = LLMResponse.collect(self._llm.generate(request))
        except Exception as exc:  # noqa: BLE001 - providers should yield ErrorChunks; a raise is recorded the same way
            response, error = LLMResponse(), f"summarization LLM call raised {type(exc).__name__}: {exc}"
        summary = response.text.strip()
        if not error and response.error is not None:
            error = f"summarization LLM call failed: {response.error.message}"
        elif not error and not summary:
            error = "summarization LLM call returned an empty reply"
        error = mask_text(error)  # provider error text comes from outside: masked before it is stored or raised
        self._recorder.record_llm_interaction(LLMInteractionRecord(
            interaction_type="summarization", provider=self._provider_name, model=self._provider_cfg.model,
            conversation=[m.model_dump(mode="json") for m in messages]
            + [response.as_assistant_message().model_dump(mode="json")],
            thinking_content=response.thinking, usage=response.usage,
            duration_ms=int((time.monotonic() - started) * 1000), success=not error, error_message=error,
        ))
        if error:
            raise SummarizationError(error)
        return summary
