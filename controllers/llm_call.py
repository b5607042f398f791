"""The one place a controller calls the LLM: stream to the timeline, stop on cancel, record the interaction.

Every controller does the same around a call — open streaming timeline events,
forward deltas, watch for cancellation and the deadline, aggregate the reply,
store an LLMInteraction with the full conversation sent plus the reply
(EP-0014) — so it lives here once. A provider's error text comes from outside
(an API's error body): it is masked here, where it enters, so the interaction,
the error event, the execution's error and the retry prompt all get masked text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from agents.context import ExecutionContext, LLMInteractionRecord
from agents.llm.retry import DEADLINE_EXCEEDED, EMPTY_RESPONSE
from agents.llm.types import (
    ConversationMessage,
    ErrorChunk,
    LLMRequest,
    LLMResponse,
    TextChunk,
    ThinkingChunk,
    ToolDefinition,
)
from agents.mcp.masking.boundary import mask_text
from agents.timeline_events import TextSource, TimelineEventType, event_metadata

DEADLINE_CODE = DEADLINE_EXCEEDED  # one code for "out of time", whether the provider or this loop noticed it
# Provider timeouts (HTTP 408, SDK read timeouts) count like a missed deadline towards "2 timeouts in a row".
TIMEOUT_CODES = frozenset({DEADLINE_CODE, "timeout"})


@dataclass
class LLMCallResult:
    response: LLMResponse
    stopped: str | None = None  # "cancelled" / "timed_out" when the session stopped mid-stream
    thinking_event_id: int | None = None
    text_event_id: int | None = None

    @property
    def error(self) -> ErrorChunk | None:
        return self.response.error

    @property
    def timed_out(self) -> bool:
        return bool(self.error and self.error.code in TIMEOUT_CODES)


def call_llm(
    ctx: ExecutionContext,
    messages: list[ConversationMessage],
    *,
    interaction_type: str,
    tools: list[ToolDefinition] | None = None,
    text_event_type: TimelineEventType | None = TimelineEventType.LLM_RESPONSE,
    text_source: TextSource = "native",
    max_output_tokens: int | None = None,
) -> LLMCallResult:
    """Stream one call. Thinking deltas go to an `llm_thinking` event (source `native`: the model's own
    reasoning); text deltas to a `text_event_type` event with metadata source `text_source` (None: not
    streamed). The caller completes or re-types the text event once it knows what the text is."""
    cfg = ctx.config
    request = LLMRequest(
        messages=messages, tools=tools or [], provider=cfg.llm_provider, provider_name=cfg.llm_provider_name,
        agent_name=ctx.agent_name, execution_id=ctx.execution_id, session_id=ctx.session_id,
        interaction_type=interaction_type, iteration=ctx.state.iteration, native_tools=cfg.native_tools,
        max_output_tokens=max_output_tokens, deadline=ctx.deadline,
    )
    result = LLMCallResult(response=LLMResponse())
    recorder = ctx.recorder
    recorder.flush()  # what the step recorded so far shows while the model works
    started = time.monotonic()
    stream = ctx.llm.generate(request)
    try:
        for chunk in stream:
            result.response.add(chunk)
            if isinstance(chunk, ThinkingChunk) and chunk.text:
                if result.thinking_event_id is None:
                    result.thinking_event_id = recorder.start_event(
                        TimelineEventType.LLM_THINKING, event_metadata(TimelineEventType.LLM_THINKING, source="native"))
                recorder.stream_event(result.thinking_event_id, chunk.text, kind="thinking")
            elif isinstance(chunk, TextChunk) and chunk.text and text_event_type:
                if result.text_event_id is None:
                    result.text_event_id = recorder.start_event(
                        text_event_type, event_metadata(text_event_type, source=text_source))
                recorder.stream_event(result.text_event_id, chunk.text, kind="text")
            if recorder.stop_reason():
                result.stopped = recorder.stop_reason()
                break
            if time.time() > ctx.deadline and not result.response.error:
                result.response.error = ErrorChunk(message="LLM call exceeded the iteration deadline",
                                                   code=DEADLINE_CODE, retryable=True)
                break
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()
    response = result.response
    if response.error is not None:
        response.error = response.error.model_copy(update={"message": mask_text(response.error.message)})
    if result.thinking_event_id is not None:
        recorder.complete_event(result.thinking_event_id, response.thinking,
                                status="completed" if not result.stopped else result.stopped)
    if result.stopped and result.text_event_id is not None:
        recorder.complete_event(result.text_event_id, response.text, status=result.stopped)
        result.text_event_id = None
    error = response.error
    if not error and not result.stopped and not response.text.strip() and not response.tool_calls:
        response.error = error = ErrorChunk(message="LLM returned an empty response", code=EMPTY_RESPONSE,
                                            retryable=True)
    success = error is None and not result.stopped
    # EP-0014: the conversation sent, plus the reply only when there is one (a failed call has none).
    conversation = [m.model_dump(exclude_none=True) for m in messages]
    if success:
        conversation.append(response.as_assistant_message().model_dump(exclude_none=True))
    recorder.record_llm_interaction(LLMInteractionRecord(
        interaction_type=interaction_type, provider=cfg.llm_provider_name, model=cfg.llm_provider.model,
        conversation=conversation, thinking_content=response.thinking, usage=response.usage,
        duration_ms=int((time.monotonic() - started) * 1000),
        success=success,
        error_message=error.message if error else (f"stopped: {result.stopped}" if result.stopped else ""),
    ))
    return result
