"""A session's pseudonyms: each identifier's stable typed placeholder, and the two directions of the mapping.

`<kind:n>` numbers count per kind within one session, in the order identifiers were first found; the mapping is
stored with the session (tarsy.services.pseudonyms), so every worker, the chat and later stages use the same one.
Replacement is exact and whole-name: a known value is replaced where it does not continue a longer name
(`shop` in `shop-db` stays for `shop-db` to be found as itself; `shop` in `db.shop.svc` is replaced).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .identifiers import PLACEHOLDER_RE

_NAME_CHAR = r"A-Za-z0-9_\-"


@dataclass(frozen=True)
class Pseudonym:
    kind: str
    number: int
    value: str

    @property
    def placeholder(self) -> str:
        return f"<{self.kind}:{self.number}>"


@dataclass
class Pseudonyms:
    """The mapping of one session, and which placeholders the text it replaced contained (`given`): only those are
    restored in what the model answers; any other placeholder is one it invented, and stays as written."""

    entries: list[Pseudonym]
    given: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._by_value = {e.value: e for e in self.entries}
        self._by_placeholder = {e.placeholder: e.value for e in self.entries}
        values = sorted(self._by_value, key=len, reverse=True)  # the longest name wins where names overlap
        self._pattern = re.compile(
            rf"(?<![{_NAME_CHAR}])(?:{'|'.join(map(re.escape, values))})(?![{_NAME_CHAR}])") if values else None

    def knows(self, value: str) -> bool:
        return value in self._by_value

    def replace(self, text: str) -> str:
        """`text` with every known identifier replaced by its placeholder."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(self._placeholder_of, text)

    def redact(self, text: str) -> str:
        """`text` with every known identifier replaced by its kind alone (`<pod>`): one way, for embeddings."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda m: f"<{self._by_value[m.group(0)].kind}>", text)

    def _placeholder_of(self, match: re.Match[str]) -> str:
        placeholder = self._by_value[match.group(0)].placeholder
        self.given.add(placeholder)
        return placeholder

    def replace_value(self, value: Any) -> Any:
        """Strings inside a JSON-shaped value (tool-call arguments) replaced."""
        return _map_strings(value, self.replace)

    def restore(self, text: str) -> str:
        """`text` with every placeholder the model was given turned back into its real value."""
        if "<" not in text:
            return text
        return PLACEHOLDER_RE.sub(lambda m: self._by_placeholder.get(m.group(0), m.group(0))
                                  if m.group(0) in self.given else m.group(0), text)

    def restore_value(self, value: Any) -> Any:
        return _map_strings(value, self.restore)


def placeholders_in(value: Any) -> list[str]:
    """Every placeholder-shaped string inside a JSON-shaped value (what must never reach a tool)."""
    found: set[str] = set()

    def collect(text: str) -> str:
        found.update(m.group(0) for m in PLACEHOLDER_RE.finditer(text))
        return text

    _map_strings(value, collect)
    return sorted(found)


def _map_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {fn(k) if isinstance(k, str) else k: _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    return value
