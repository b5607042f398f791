"""The one recorded LLM call: every call (controller iteration, tool-result summary, executive summary) goes here.

Like an instrumented model, it wraps a provider adapter and turns one request into one reply plus one
`LLMInteractionRecord`, with the same rules for everyone:

- the conversation is stored as the messages sent (`model_dump(mode="json", exclude_none=True)`), plus the
  reply: a call cut off mid-stream (stopped, broken or interrupted) stores the text received so far as its
  reply, with the call marked failed and why in its error message; a call that received nothing stores none;
- a failure is an `ErrorChunk` on the response: the provider's own, a reply with no text and no tool call, or a
  passed deadline; the provider's error text comes from outside and is masked here, where it enters. Adapters
  never raise; an exception (a bug, or the worker's time limit interrupting the call) is recorded as a failed
  call and propagates;
- the usage of each call is recorded in `interaction_record`, the one place that turns a finished call into
  its record;
- a provider that pseudonymises (agents.privacy) is sent the request with identifiers replaced, and that is what
  the record keeps, with the reply as the model wrote it; the caller, the observer and everything they store or
  show get the reply restored to real values.

Streaming callers (the controllers) pass an observer that sees each chunk as it arrives and may stop the call.

A thread waits here for seconds, on the call and on each next chunk: before each wait it runs the process's
`before_wait` hook (`install_before_wait`; tarsy gives the thread's pooled database connection back there, so a
thread waiting on a model holds none, whatever it or the observer queried since its last wait).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agents.context import LLMInteractionRecord
from agents.mcp.masking.boundary import mask_text
from agents.privacy.veil import veil

from .registry import LLMTarget
from .retry import DEADLINE_EXCEEDED, EMPTY_RESPONSE, MIN_ATTEMPT_S, RATE_LIMIT
from .types import Chunk, ConversationMessage, ErrorChunk, LLMRequest, LLMResponse

logger = logging.getLogger(__name__)


def _nothing() -> None:
    pass


_before_wait: Callable[[], None] = _nothing


def install_before_wait(hook: Callable[[], None]) -> None:
    """Run `hook` in the calling thread before it waits on a provider (once per process, at startup)."""
    global _before_wait
    _before_wait = hook


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
    seen: LLMResponse | None = None  # the reply as the model wrote it, when that differs (pseudonymised)

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
    response, error = call.seen or call.response, call.response.error
    reply: ConversationMessage | None
    if call.succeeded:
        reply = response.as_assistant_message()
    else:  # what was received before the call was cut off, never replayed (the conversation is rebuilt elsewhere)
        reply = ConversationMessage(role="assistant", content=response.text) if response.text else None
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
    record: Callable[[LLMInteractionRecord], object],
    observer: CallObserver | None = None,
) -> RecordedCall:
    """Send `request` to `target`, aggregate the reply, store its interaction through `record`, return it."""
    request = request.model_copy(update={"provider": target.config, "provider_name": target.name})
    call = RecordedCall(response=LLMResponse(), target=target)
    response = call.response
    started = time.monotonic()
    pseudonyms = veil(request, target.config)
    if pseudonyms is not None:
        request, call.seen = pseudonyms.request(request), LLMResponse()
    stream = target.adapter.generate(request)
    try:
        _before_wait()
        for chunk in stream:
            if call.seen is not None:
                call.seen.add(chunk)
            call.stopped = _take(call, pseudonyms.restore(chunk) if pseudonyms else (chunk,), observer)
            if call.stopped:
                break
            if request.deadline is not None and time.time() > request.deadline and response.error is None:
                response.error = ErrorChunk(message="LLM call exceeded its deadline", code=DEADLINE_EXCEEDED,
                                            retryable=True)
                break
            _before_wait()
    except Exception as exc:
        response.error = ErrorChunk(message=f"LLM call interrupted by {type(exc).__name__}: {exc}", code="raised")
        with contextlib.suppress(Exception):  # the interruption is what the caller must see, not a failed write
            _finish(request, call, started, record)
        raise
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()
    if pseudonyms is not None and not call.stopped:
        call.stopped = _take(call, pseudonyms.flush(), observer)
    _finish(request, call, started, record)
    return call


def _take(call: RecordedCall, chunks: Iterable[Chunk], observer: CallObserver | None) -> str | None:
    """Fold chunks into the caller's response and show them to the observer; why it stopped the call, if it did."""
    for chunk in chunks:
        call.response.add(chunk)
        if observer is not None:
            stopped = observer.chunk(chunk)
            if stopped:
                return stopped
    return None


def _finish(request: LLMRequest, call: RecordedCall, started: float,
            record: Callable[[LLMInteractionRecord], object]) -> None:
    response = call.response
    if response.error is not None:
        response.error = response.error.model_copy(update={"message": mask_text(response.error.message)})
    elif not call.stopped and not response.text.strip() and not response.tool_calls:
        response.error = ErrorChunk(message="LLM returned an empty response", code=EMPTY_RESPONSE, retryable=True)
    call.record = interaction_record(request, call, duration_ms=int((time.monotonic() - started) * 1000))
    record(call.record)


# ---- provider fallback ---------------------------------------------------------------------------------------------

# Failures another provider may not share: throttling, the vendor's outage, a dead or stalled connection (after the
# adapter's own retries), and credentials the vendor rejects (at once: retrying cannot fix them). A bad request or
# a missed iteration deadline would fail on any provider, so they end the call.
FALLBACK_CODES = frozenset({RATE_LIMIT, "server_error", "timeout", "connection", "auth", "missing_api_key"})


def falls_back(call: RecordedCall) -> bool:
    return call.stopped is None and call.error is not None and call.error.code in FALLBACK_CODES


class FallbackObserver(CallObserver, Protocol):
    def fell_back(self, failed: RecordedCall, to: LLMTarget) -> None:
        """`failed` is over (recorded); the call continues on `to`."""
        ...


def call_with_fallback(
    request: LLMRequest,
    targets: Sequence[LLMTarget],
    *,
    record: Callable[[LLMInteractionRecord], object],
    observer: FallbackObserver | None = None,
    min_attempt_s: float = MIN_ATTEMPT_S,
) -> RecordedCall:
    """`recorded_call` on the first target, then on each next one while the failure is one another provider may
    not share and time is left. Each attempt is its own recorded interaction, under the provider that made it.
    The conversation carries over; provider state (thought signatures) does not cross into another family."""
    messages, family = request.messages, targets[0].family
    for index, target in enumerate(targets):
        if target.family != family:
            messages, family = without_provider_state(messages), target.family
        call = recorded_call(request.model_copy(update={"messages": messages}), target, record=record,
                             observer=observer)
        last = index == len(targets) - 1
        out_of_time = request.deadline is not None and time.time() + min_attempt_s > request.deadline
        if last or out_of_time or not falls_back(call):
            return call
        logger.warning("%s failed (%s); continuing on %s", target.name, call.error.code, targets[index + 1].name)
        if observer is not None:
            observer.fell_back(call, targets[index + 1])
    raise ValueError("call_with_fallback needs at least one target")
