"""The one recorded LLM call: every call (controller iteration, tool-result summary, executive summary) goes here.

Like an instrumented model, it wraps a provider adapter and turns one request into one reply plus one
`LLMInteractionRecord`, with the same rules for everyone:

- the conversation is stored as the messages sent (`model_dump(mode="json", exclude_none=True)`), plus the
  reply only when there is one: a failed or stopped call stores no reply;
- a failure is an `ErrorChunk` on the response: the provider's own, a reply with no text and no tool call, or a
  passed deadline; the provider's error text comes from outside and is masked here, where it enters. Adapters
  never raise; an exception (a bug, or the worker's time limit interrupting the call) is recorded as a failed
  call and propagates;
- the usage of each call is recorded in `interaction_record`, the one place that turns a finished call into
  its record.

Streaming callers (the controllers) pass an observer that sees each chunk as it arrives and may stop the call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agents.config.schema import LLMProviderConfig
from agents.context import LLMInteractionRecord
from agents.mcp.masking.boundary import mask_text

from .base import Provider
from .registry import backend_for, get_provider
from .retry import DEADLINE_EXCEEDED, EMPTY_RESPONSE
from .types import Chunk, ConversationMessage, ErrorChunk, LLMRequest, LLMResponse


@dataclass(frozen=True)
class LLMTarget:
    """A provider that can answer a call: its configured name, its config and the adapter serving it."""

    name: str
    config: LLMProviderConfig
    adapter: Provider

    @classmethod
    def of(cls, name: str, config: LLMProviderConfig) -> LLMTarget:
        return cls(name=name, config=config, adapter=get_provider(name, config))

    @property
    def family(self) -> str:
        """Provider state (e.g. Gemini thought signatures) can be replayed only within one family."""
        return f"{backend_for(self.config)}:{self.config.type}"


class CallObserver(Protocol):
    def chunk(self, chunk: Chunk) -> str | None:
        """See one chunk as it arrives; a returned reason ("cancelled", "timed_out") stops the call."""
        ...


@dataclass
class RecordedCall:
    response: LLMResponse
    target: LLMTarget  # the provider that answered (or failed)
    stopped: str | None = None  # why the observer stopped the call mid-stream
    record: LLMInteractionRecord | None = None

    @property
    def error(self) -> ErrorChunk | None:
        return self.response.error

    @property
    def succeeded(self) -> bool:
        return self.response.error is None and self.stopped is None


def conversation_record(messages: list[ConversationMessage], reply: ConversationMessage | None) -> list[dict[str, Any]]:
    """The one serialisation of a call's conversation: what was sent, then the reply when there is one."""
    sent = [*messages, reply] if reply is not None else messages
    return [m.model_dump(mode="json", exclude_none=True) for m in sent]


def without_provider_state(messages: list[ConversationMessage]) -> list[ConversationMessage]:
    """The conversation for a provider of another family: state only its producer can replay is dropped."""
    return [m.model_copy(update={"provider_state": None}) if m.provider_state else m for m in messages]


def interaction_record(request: LLMRequest, call: RecordedCall, *, duration_ms: int) -> LLMInteractionRecord:
    """What is stored for one finished call, its usage included (the place per-call accounting belongs)."""
    response, error = call.response, call.response.error
    reply = response.as_assistant_message() if call.succeeded else None
    if error is not None:
        error_message = error.message
    else:
        error_message = f"stopped: {call.stopped}" if call.stopped else ""
    return LLMInteractionRecord(
        interaction_type=request.interaction_type, provider=call.target.name, model=call.target.config.model,
        conversation=conversation_record(request.messages, reply), thinking_content=response.thinking,
        usage=response.usage, duration_ms=duration_ms, success=call.succeeded, error_message=error_message,
    )


def recorded_call(
    request: LLMRequest,
    target: LLMTarget,
    *,
    record: Callable[[LLMInteractionRecord], None],
    observer: CallObserver | None = None,
) -> RecordedCall:
    """Send `request` to `target`, aggregate the reply, store its interaction through `record`, return it."""
    request = request.model_copy(update={"provider": target.config, "provider_name": target.name})
    call = RecordedCall(response=LLMResponse(), target=target)
    response = call.response
    started = time.monotonic()
    stream = target.adapter.generate(request)
    try:
        for chunk in stream:
            response.add(chunk)
            if observer is not None:
                call.stopped = observer.chunk(chunk)
                if call.stopped:
                    break
            if request.deadline is not None and time.time() > request.deadline and response.error is None:
                response.error = ErrorChunk(message="LLM call exceeded its deadline", code=DEADLINE_EXCEEDED,
                                            retryable=True)
                break
    except Exception as exc:
        response.error = ErrorChunk(message=f"LLM call interrupted by {type(exc).__name__}: {exc}", code="raised")
        with contextlib.suppress(Exception):  # the interruption is what the caller must see, not a failed write
            _finish(request, call, started, record)
        raise
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()
    _finish(request, call, started, record)
    return call


def _finish(request: LLMRequest, call: RecordedCall, started: float,
            record: Callable[[LLMInteractionRecord], None]) -> None:
    response = call.response
    if response.error is not None:
        response.error = response.error.model_copy(update={"message": mask_text(response.error.message)})
    elif not call.stopped and not response.text.strip() and not response.tool_calls:
        response.error = ErrorChunk(message="LLM returned an empty response", code=EMPTY_RESPONSE, retryable=True)
    call.record = interaction_record(request, call, duration_ms=int((time.monotonic() - started) * 1000))
    record(call.record)
