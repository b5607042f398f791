"""Retries, backoff and deadlines shared by the real providers.

A provider adapter supplies one attempt (a callable returning the SDK stream
already mapped to our chunks) and a classifier for its SDK's exceptions;
`generate_with_retries` owns everything else: the deadline, backoff on a rate
limit (429) or a server error (5xx), empty-answer retries, and the rule that a stream the caller has already seen is
never restarted. It never raises: every failure ends in one final ErrorChunk.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from agents.mcp.masking.boundary import mask_text

from .types import Chunk, ErrorChunk, ProviderStateChunk, TextChunk, ToolCallChunk, UsageChunk

logger = logging.getLogger(__name__)

T = TypeVar("T")

# 2 s, 4 s, 8 s: provider quotas are per minute, so a short burst of backoff usually clears a 429.
# Overridable by environment so multi-process test runs do not wait for real backoff.
BACKOFF_BASE_S = float(os.environ.get("TARSY_LLM_BACKOFF_BASE_S", "2.0"))
BACKOFF_MAX_S = 30.0  # never wait longer than a typical iteration budget allows
EMPTY_RETRY_DELAY_S = float(os.environ.get("TARSY_LLM_EMPTY_RETRY_DELAY_S", "3.0"))  # empty answers are flukes
MAX_RETRIES = 3  # per failure kind; after that the caller decides (it sees ErrorChunk.retryable)
# A 5xx is usually one overloaded or restarting replica: worth two retries with the same backoff, but not the
# 14 s a third would cost before a configured fallback provider may take over.
MAX_SERVER_ERROR_RETRIES = 2
MIN_ATTEMPT_S = 1.0  # a retry with less time than this before the deadline cannot produce an answer

RATE_LIMIT = "rate_limit"
SERVER_ERROR = "server_error"
DEADLINE_EXCEEDED = "deadline_exceeded"
EMPTY_RESPONSE = "empty_response"


class ProviderError(Exception):
    """A provider failure in our terms; SDK exceptions are converted to this by each adapter."""

    def __init__(self, message: str, code: str = "provider_error", retryable: bool = False) -> None:
        super().__init__(message)
        self.message, self.code, self.retryable = message, code, retryable

    def as_chunk(self) -> ErrorChunk:
        return ErrorChunk(message=self.message, code=self.code, retryable=self.retryable)


class DeadlineExceeded(Exception):
    """The request's deadline passed while waiting for the provider."""


@dataclass(frozen=True)
class RetryPolicy:
    """How many times and how long to wait; tests pass tiny delays."""

    rate_limit_retries: int = MAX_RETRIES
    server_error_retries: int = MAX_SERVER_ERROR_RETRIES
    empty_retries: int = MAX_RETRIES
    backoff_base_s: float = BACKOFF_BASE_S
    backoff_max_s: float = BACKOFF_MAX_S
    empty_delay_s: float = EMPTY_RETRY_DELAY_S
    min_attempt_s: float = MIN_ATTEMPT_S

    def backoff(self, retry_index: int) -> float:
        return min(self.backoff_max_s, self.backoff_base_s * (2**retry_index))


# ---- classification ----------------------------------------------------------


def error_for_status(status: int, message: str) -> ProviderError:
    """Map an HTTP status (and the vendor's status text inside `message`) to our error."""
    if status == 429 or "RESOURCE_EXHAUSTED" in message:
        return ProviderError(message, RATE_LIMIT, True)
    if status in (401, 403):
        return ProviderError(message, "auth", False)
    if status == 408:
        return ProviderError(message, "timeout", True)
    if status >= 500:
        return ProviderError(message, SERVER_ERROR, True)
    if status == 404:
        return ProviderError(message, "not_found", False)
    return ProviderError(message, "bad_request", False)


def _status_of(exc: BaseException) -> int | None:
    for attr in ("status_code", "code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and 100 <= value < 600:
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def classify_exception(exc: BaseException) -> ProviderError:
    """Duck-typed classification for any SDK: HTTP status first, then the exception's kind.

    Walks the cause chain because wrappers (e.g. LangChain integrations) re-raise SDK errors.
    """
    if isinstance(exc, ProviderError):
        return exc
    seen: BaseException | None = exc
    while seen is not None:
        status = _status_of(seen)
        if status is not None:
            return error_for_status(status, f"{type(seen).__name__}: {seen}")
        names = " ".join(cls.__name__ for cls in type(seen).__mro__)
        if "RateLimit" in names:
            return ProviderError(f"{type(seen).__name__}: {seen}", RATE_LIMIT, True)
        if "Timeout" in names or isinstance(seen, TimeoutError):
            return ProviderError(f"{type(seen).__name__}: {seen}", "timeout", True)
        if any(key in names for key in ("Connect", "Network", "RemoteProtocol", "ReadError")) or isinstance(
            seen, ConnectionError
        ):
            return ProviderError(f"{type(seen).__name__}: {seen}", "connection", True)
        seen = seen.__cause__ or seen.__context__
    return ProviderError(f"{type(exc).__name__}: {exc}", "provider_error", False)


# ---- deadline ------------------------------------------------------------------


def stream_until(start: Callable[[], Iterable[T]], deadline: float | None) -> Iterator[T]:
    """Iterate `start()` in a worker thread, waiting on a queue for at most the time left.

    SDK streams block in socket reads that no signal interrupts; reading them in a
    thread lets the caller give up at the deadline however the stream stalls. When
    the caller stops early the worker stops at its next item and closes the stream.
    """
    items: queue.Queue[tuple[str, object]] = queue.Queue()
    stop = threading.Event()

    def work() -> None:
        try:
            iterator = iter(start())
            try:
                for item in iterator:
                    if stop.is_set():
                        break
                    items.put(("item", item))
            finally:
                close = getattr(iterator, "close", None)
                if callable(close):
                    close()
            items.put(("done", None))
        except BaseException as exc:  # handed to the consumer, which classifies it
            items.put(("error", exc))

    worker = threading.Thread(target=work, name="llm-stream", daemon=True)
    worker.start()
    try:
        while True:
            timeout = None if deadline is None else deadline - time.time()
            if timeout is not None and timeout <= 0:
                raise DeadlineExceeded()
            try:
                kind, value = items.get(timeout=timeout)
            except queue.Empty:
                raise DeadlineExceeded() from None
            if kind == "item":
                yield value  # type: ignore[misc]
            elif kind == "done":
                return
            else:
                raise value  # type: ignore[misc]
    finally:
        stop.set()


# ---- retry loop ------------------------------------------------------------------


@dataclass
class _Outcome:
    error: ProviderError | None = None
    visible: bool = False  # the caller has seen chunks of this attempt
    has_content: bool = False  # text or tool calls
    held: list[Chunk] = field(default_factory=list)  # usage/provider state, released at the end


def _is_content(chunk: Chunk) -> bool:
    return isinstance(chunk, ToolCallChunk) or (isinstance(chunk, TextChunk) and bool(chunk.text.strip()))


def _attempt(
    start: Callable[[], Iterable[Chunk]], deadline: float | None, classify: Callable[[BaseException], ProviderError]
) -> Generator[Chunk, None, _Outcome]:
    outcome = _Outcome()
    try:
        for chunk in stream_until(start, deadline):
            if isinstance(chunk, (UsageChunk, ProviderStateChunk)):
                outcome.held.append(chunk)  # invisible: an attempt with only these can still be retried
                continue
            outcome.visible = True
            outcome.has_content = outcome.has_content or _is_content(chunk)
            yield chunk
    except DeadlineExceeded:
        outcome.error = ProviderError("the LLM call did not finish before its deadline", DEADLINE_EXCEEDED, True)
    except Exception as exc:
        outcome.error = exc if isinstance(exc, ProviderError) else classify(exc)
    return outcome


def generate_with_retries(
    start: Callable[[], Iterable[Chunk]],
    *,
    deadline: float | None,
    classify: Callable[[BaseException], ProviderError] = classify_exception,
    policy: RetryPolicy | None = None,
    label: str = "llm",
) -> Iterator[Chunk]:
    """Run attempts until one answers; yield its chunks, or one final ErrorChunk.

    Usage of discarded attempts is still yielded: those tokens were paid for.
    """
    policy = policy or RetryPolicy()
    empties = 0
    backoff_budget = {RATE_LIMIT: policy.rate_limit_retries, SERVER_ERROR: policy.server_error_retries}
    backed_off = dict.fromkeys(backoff_budget, 0)  # retries so far, per failure kind that backs off
    spent: list[Chunk] = []
    while True:
        outcome = yield from _attempt(start, deadline, classify)
        spent.extend(c for c in outcome.held if isinstance(c, UsageChunk))
        if outcome.error is None and outcome.has_content:
            yield from spent
            yield from (c for c in outcome.held if not isinstance(c, UsageChunk))
            return
        if outcome.error is None:
            error = ProviderError("the LLM returned an empty response", EMPTY_RESPONSE, True)
            retry_allowed, delay = empties < policy.empty_retries, policy.empty_delay_s
            empties += 1
        else:
            error = outcome.error
            retries = backed_off.get(error.code)
            retry_allowed = retries is not None and retries < backoff_budget[error.code]
            delay = policy.backoff(retries or 0)
            if retries is not None:
                backed_off[error.code] = retries + 1
        if outcome.visible or not retry_allowed:
            yield from spent
            yield error.as_chunk()
            return
        if deadline is not None and time.time() + delay + policy.min_attempt_s > deadline:
            yield from spent
            yield ErrorChunk(message=f"{error.message} (no time left to retry)", code=error.code, retryable=True)
            return
        logger.warning("%s: %s (%s); retrying in %.1fs", label, error.code, mask_text(error.message)[:200], delay)
        time.sleep(delay)
