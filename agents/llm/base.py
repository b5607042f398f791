"""The one interface every LLM provider implements."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from .types import Chunk, LLMRequest


class Provider(Protocol):
    """`generate` streams chunks for one request.

    Failures are not raised: after its own retries a provider yields a final
    `ErrorChunk(retryable=…)`, so callers handle every outcome in one place.
    """

    name: str  # what the UI shows ("demo" for the demo provider)

    def generate(self, request: LLMRequest) -> Iterator[Chunk]: ...
