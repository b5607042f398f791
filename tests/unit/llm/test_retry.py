"""Error classification and the deadline-bounded stream reader shared by the real providers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from agents.llm.retry import DeadlineExceeded, ProviderError, classify_exception, error_for_status, stream_until


@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (429, "rate_limit", True),
        (500, "server_error", True),
        (503, "server_error", True),
        (408, "timeout", True),
        (400, "bad_request", False),
        (401, "auth", False),
        (403, "auth", False),
        (404, "not_found", False),
    ],
)
def test_http_status_classification(status, code, retryable):
    error = error_for_status(status, "boom")

    assert (error.code, error.retryable) == (code, retryable)


def test_resource_exhausted_text_means_rate_limit_whatever_the_status():
    assert error_for_status(400, "400 RESOURCE_EXHAUSTED quota").code == "rate_limit"


class ReadTimeout(Exception):
    pass


class APIConnectionError(Exception):
    pass


class WrappedError(Exception):
    pass


class StatusError(Exception):
    status_code = 503


def test_exceptions_are_classified_by_status_kind_and_cause():
    assert classify_exception(ReadTimeout("slow")).code == "timeout"
    assert classify_exception(TimeoutError()).code == "timeout"
    assert classify_exception(APIConnectionError("refused")).code == "connection"
    assert classify_exception(ConnectionResetError()).retryable
    try:
        try:
            raise StatusError("unavailable")
        except StatusError as inner:
            raise WrappedError("integration wrapper") from inner
    except WrappedError as outer:
        assert (classify_exception(outer).code, classify_exception(outer).retryable) == ("server_error", True)  # noqa: PT017
    unknown = classify_exception(KeyError("bug"))
    assert (unknown.code, unknown.retryable) == ("provider_error", False)
    own = ProviderError("x", "missing_api_key")
    assert classify_exception(own) is own


def test_stream_until_yields_items_and_reraises_errors_from_the_worker():
    def source() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("broken stream")

    seen = []
    with pytest.raises(ValueError, match="broken stream"):
        for item in stream_until(source, deadline=time.time() + 5):
            seen.append(item)
    assert seen == [1, 2]


def test_stream_until_gives_up_on_a_blocked_source_at_the_deadline():
    release = threading.Event()

    def blocked() -> Iterator[str]:
        yield "first"
        release.wait(10)  # like a socket read that never returns
        yield "late"

    started = time.monotonic()
    seen = []
    with pytest.raises(DeadlineExceeded):
        for item in stream_until(blocked, deadline=time.time() + 0.3):
            seen.append(item)
    release.set()

    assert seen == ["first"]
    assert 0.25 < time.monotonic() - started < 1.0
