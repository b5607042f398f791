"""A controller's LLM call: the recorded call of `agents.llm.recorded`, streamed to the timeline.

Every controller does the same around a call — open streaming timeline events, forward deltas, watch for
cancellation, complete the events once the reply is whole — so it lives here once. Recording the interaction,
masking the provider's error text and deciding what a failed reply is belong to the recorded call, which the
MCP summarizer and the executive summary use as well.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.config.schema import NativeTools
from agents.context import ExecutionContext
from agents.llm.recorded import LLMTarget, RecordedCall, call_with_fallback, falls_back
from agents.llm.retry import DEADLINE_EXCEEDED
from agents.llm.types import (
    Chunk,
    ConversationMessage,
    ErrorChunk,
    LLMRequest,
    LLMResponse,
    TextChunk,
    ThinkingChunk,
    ToolDefinition,
)
from agents.timeline_events import TextSource, TimelineEventType, event_metadata

DEADLINE_CODE = DEADLINE_EXCEEDED  # one code for "out of time", whether the provider or this loop noticed it
# Provider timeouts (HTTP 408, SDK read timeouts) count like a missed deadline towards "2 timeouts in a row".
TIMEOUT_CODES = frozenset({DEADLINE_CODE, "timeout"})
# Strategies that read replies as text (ReAct) do not ask for Gemini's server-side tools.
NO_NATIVE_TOOLS = NativeTools(google_search=False, code_execution=False, url_context=False)


@dataclass
class LLMCallResult:
    response: LLMResponse
    stopped: str | None = None  # "cancelled" / "timed_out" when the session stopped mid-stream
    thinking_event_id: int | None = None
    text_event_id: int | None = None
    provider_name: str = ""  # the provider that answered

    @property
    def error(self) -> ErrorChunk | None:
        return self.response.error

    @property
    def timed_out(self) -> bool:
        return bool(self.error and self.error.code in TIMEOUT_CODES)


def fallback_warning(failed: RecordedCall, to: LLMTarget) -> tuple[str, dict]:
    """The timeline warning (content, metadata) that a call moved from a failed provider to the next one: every
    recorded call that falls back says it the same way (iterations here, the executive summary on the session)."""
    error = failed.error or ErrorChunk(message="failed")  # only a failed call falls back
    return (f"LLM provider {failed.target.name} failed ({error.code}: {error.message}); continuing on {to.name}",
            event_metadata(TimelineEventType.ERROR, code=error.code, retryable=error.retryable, warning=True,
                           provider=failed.target.name, fallback_provider=to.name))


class _TimelineStream:
    """Streams one call's thinking and text deltas into timeline events; stops when the session must stop."""

    def __init__(self, ctx: ExecutionContext, text_event_type: TimelineEventType | None,
                 text_source: TextSource) -> None:
        self._ctx = ctx
        self._recorder = ctx.recorder
        self._liveness = ctx.liveness
        self._text_event_type = text_event_type
        self._text_source = text_source
        self.thinking_event_id: int | None = None
        self.text_event_id: int | None = None

    def _metadata(self, event_type: TimelineEventType, source: TextSource) -> dict:
        return event_metadata(event_type, source=source, fallback_provider=self._ctx.fallback_provider)

    def chunk(self, chunk: Chunk) -> str | None:
        recorder = self._recorder
        if isinstance(chunk, ThinkingChunk) and chunk.text:
            if self.thinking_event_id is None:
                self.thinking_event_id = recorder.stream_open(
                    TimelineEventType.LLM_THINKING, self._metadata(TimelineEventType.LLM_THINKING, "native"))
            recorder.stream_event(self.thinking_event_id, chunk.text, kind="thinking")
        elif isinstance(chunk, TextChunk) and chunk.text and self._text_event_type:
            if self.text_event_id is None:
                self.text_event_id = recorder.stream_open(
                    self._text_event_type, self._metadata(self._text_event_type, self._text_source))
            recorder.stream_event(self.text_event_id, chunk.text, kind="text")
        return self._liveness.stop_reason()

    def fell_back(self, failed: RecordedCall, to: LLMTarget) -> None:
        """Close what the failed provider streamed, say on the timeline who takes over, and persist the switch."""
        status = "failed"
        if self.thinking_event_id is not None:
            self._recorder.complete_event(self.thinking_event_id, failed.response.thinking, status=status)
        if self.text_event_id is not None:
            self._recorder.complete_event(self.text_event_id, failed.response.text, status=status)
        self.thinking_event_id = self.text_event_id = None
        self._recorder.llm_call_started(failed.record.interaction_type if failed.record else "iteration", to.name,
                                        to.config.model)
        self._recorder.flush()  # the next attempt's row, before it starts
        self._recorder.add_event(TimelineEventType.ERROR, *fallback_warning(failed, to), status="failed")
        self._ctx.fallback_provider = to.name if to.name != self._ctx.config.configured_provider_name else None
        if self._ctx.provider_switched is not None:
            self._ctx.provider_switched(to, to.family != failed.target.family)

    def finish(self, call: RecordedCall) -> LLMCallResult:
        """Complete the thinking event (and a stopped text event); the caller completes or re-types the text."""
        response = call.response
        result = LLMCallResult(response=response, stopped=call.stopped, thinking_event_id=self.thinking_event_id,
                               text_event_id=self.text_event_id, provider_name=call.target.name)
        if self.thinking_event_id is not None:
            self._recorder.complete_event(self.thinking_event_id, response.thinking,
                                          status="completed" if not call.stopped else call.stopped)
        if call.stopped and self.text_event_id is not None:
            self._recorder.complete_event(self.text_event_id, response.text, status=call.stopped)
            result.text_event_id = None
        return result


def call_llm(
    ctx: ExecutionContext,
    messages: list[ConversationMessage],
    *,
    interaction_type: str,
    tools: list[ToolDefinition] | None = None,
    text_event_type: TimelineEventType | None = TimelineEventType.LLM_RESPONSE,
    text_source: TextSource = "native",
    max_output_tokens: int | None = None,
    native_tools: bool = True,
) -> LLMCallResult:
    """Stream one call. Thinking deltas go to an `llm_thinking` event (source `native`: the model's own
    reasoning); text deltas to a `text_event_type` event with metadata source `text_source` (None: not
    streamed). The caller completes or re-types the text event once it knows what the text is.
    `native_tools=False`: the strategy cannot use Gemini's server-side tools, so none are asked for."""
    cfg = ctx.config
    target = LLMTarget(name=cfg.llm_provider_name, config=cfg.llm_provider, adapter=ctx.llm)
    request = LLMRequest(
        messages=messages, tools=tools or [], provider=cfg.llm_provider, provider_name=cfg.llm_provider_name,
        agent_name=ctx.agent_name, execution_id=ctx.execution_id, session_id=ctx.session_id,
        interaction_type=interaction_type, iteration=ctx.state.iteration,
        native_tools=cfg.native_tools if native_tools else NO_NATIVE_TOOLS,
        max_output_tokens=max_output_tokens, deadline=ctx.deadline,
    )
    ctx.recorder.llm_call_started(interaction_type, target.name, target.config.model)
    ctx.recorder.flush()  # what the step recorded so far shows while the model works, and the call's row
    stream = _TimelineStream(ctx, text_event_type, text_source)
    call = call_with_fallback(request, (target, *ctx.fallbacks), record=ctx.recorder.record_llm_interaction,
                              observer=stream)
    if falls_back(call):
        for name, reason in cfg.skipped_fallbacks:
            ctx.recorder.add_event(TimelineEventType.ERROR, f"Fallback provider {name} not used: {reason}",
                                   event_metadata(TimelineEventType.ERROR, warning=True, provider=call.target.name,
                                                  fallback_provider=name), status="failed")
    return stream.finish(call)
