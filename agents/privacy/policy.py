"""Who sees pseudonyms, and where a session's mapping comes from.

The configuration (`privacy`) is installed once per process (tarsy.config), like the masking boundary's; the store
that keeps each session's mapping in the database is installed by the Django app (tarsy.apps). A process without
one (a unit test, a script) keeps mappings in memory: pseudonymisation never silently turns off for want of a
store.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable
from typing import Protocol

from agents.config.schema import LLMProviderConfig, PrivacyConfig

from .identifiers import find, is_identifier
from .pseudonyms import Pseudonym, Pseudonyms


class PseudonymStore(Protocol):
    """A session's mapping, shared by every process that works on the session."""

    def load(self, session_id: str) -> list[Pseudonym]:
        """The session's pseudonyms, in any order."""
        ...

    def add(self, session_id: str, found: list[tuple[str, str]]) -> list[Pseudonym]:
        """Give each new (kind, value) the next number of its kind (a value already mapped keeps its pseudonym);
        return the session's whole mapping afterwards."""
        ...


class MemoryStore:
    """Mappings held by this process only: for processes without a database."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, dict[str, Pseudonym]] = {}

    def load(self, session_id: str) -> list[Pseudonym]:
        with self._lock:
            return list(self._sessions.get(session_id, {}).values())

    def add(self, session_id: str, found: list[tuple[str, str]]) -> list[Pseudonym]:
        with self._lock:
            book = self._sessions.setdefault(session_id, {})
            for kind, value in found:
                if value not in book:
                    number = 1 + max((p.number for p in book.values() if p.kind == kind), default=0)
                    book[value] = Pseudonym(kind=kind, number=number, value=value)
            return list(book.values())


FOUND_CACHED = 4096  # messages whose identifiers are kept: a few conversations' worth per worker process
_policy = PrivacyConfig()
_store: PseudonymStore = MemoryStore()


def configure(privacy: PrivacyConfig) -> None:
    global _policy
    _policy = privacy
    _identifiers_in.cache_clear()


def install(store: PseudonymStore) -> None:
    global _store
    _store = store


def applies(provider: LLMProviderConfig) -> bool:
    """Whether `provider` sees placeholders instead of identifiers: its own setting, else the default."""
    return _policy.pseudonymise if provider.pseudonymise is None else provider.pseudonymise


@functools.lru_cache(maxsize=FOUND_CACHED)
def _identifiers_in(text: str) -> tuple[tuple[str, str], ...]:
    """Each call resends the conversation so far: its messages are searched once per process, not once per call."""
    return tuple(dict.fromkeys((kind, value) for kind, value in find(text, _policy.patterns) if is_identifier(value)))


def session_pseudonyms(session_id: str, texts: Iterable[str]) -> Pseudonyms:
    """The session's mapping, extended by the identifiers `texts` carry that it did not know yet. A call without a
    session (nothing to share a mapping with) gets a mapping of its own."""
    store = _store if session_id else MemoryStore()
    entries = store.load(session_id)
    known = {e.value for e in entries}
    new: dict[str, str] = {}
    for text in texts:
        for kind, value in _identifiers_in(text):
            if value not in known and value not in new:
                new[value] = kind
    if new:
        entries = store.add(session_id, [(kind, value) for value, kind in new.items()])
    return Pseudonyms(entries)
