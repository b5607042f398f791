"""A session's pseudonyms: each identifier's stable typed placeholder, and the two directions of the mapping.

`<kind:n>` numbers count per kind within one session, in the order identifiers were first found; the mapping is
stored with the session (tarsy.services.pseudonyms), so every worker, the chat and later stages use the same one.
Replacement is exact and whole-name: a known value is replaced where it does not continue a longer name
(`shop` in `shop-db` stays for `shop-db` to be found as itself; `shop` in `db.shop.svc` is replaced), and costs
one dictionary look-up per run of name characters, however many names the session knows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .identifiers import PLACEHOLDER_RE

# A run of characters names are made of (dots and @ included: hosts, IPs, e-mails). Replacement looks each run up
# whole, then its dot-separated parts: linear in the text whatever the number of known names.
_RUN_SPLIT = re.compile(r"([A-Za-z0-9_@%+\-.]+)")  # split() puts the runs at the odd indices
_RUN_CHARS = re.compile(r"[A-Za-z0-9_@%+\-.]+")
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
        # Values a run cannot hold whole (a configured pattern may match spaces or colons): one alternation.
        odd = sorted((v for v in self._by_value if not _RUN_CHARS.fullmatch(v)), key=len, reverse=True)
        self._odd = re.compile(
            rf"(?<![{_NAME_CHAR}])(?:{'|'.join(map(re.escape, odd))})(?![{_NAME_CHAR}])") if odd else None

    def replace(self, text: str) -> str:
        """`text` with every known identifier replaced by its placeholder."""
        return self._substitute(text, self._give)

    def redact(self, text: str) -> str:
        """`text` with every known identifier replaced by its kind alone (`<pod>`): one way, for embeddings."""
        return self._substitute(text, lambda entry: f"<{entry.kind}>")

    def _give(self, entry: Pseudonym) -> str:
        self.given.add(entry.placeholder)
        return entry.placeholder

    def _substitute(self, text: str, out: Callable[[Pseudonym], str]) -> str:
        if not self._by_value or not text:
            return text
        if self._odd is not None:
            text = self._odd.sub(lambda m: out(self._by_value[m.group(0)]), text)
        parts = _RUN_SPLIT.split(text)
        get = self._by_value.get
        for index in range(1, len(parts), 2):
            entry = get(parts[index])
            if entry is not None:
                parts[index] = out(entry)
            elif "." in parts[index]:
                parts[index] = self._run(parts[index], out)
        return "".join(parts)

    def _run(self, run: str, out: Callable[[Pseudonym], str]) -> str:
        """One run of name characters: whole (less a sentence's final dots), else its longest known dotted parts."""
        body = run.rstrip(".")
        entry = self._by_value.get(body)
        if entry is not None:
            return out(entry) + run[len(body):]
        if "." not in body:
            return run
        parts = body.split(".")
        result, start = [], 0
        while start < len(parts):
            for end in range(len(parts), start, -1):
                entry = self._by_value.get(".".join(parts[start:end]))
                if entry is not None:
                    result.append(out(entry))
                    start = end
                    break
            else:
                result.append(parts[start])
                start += 1
        return ".".join(result) + run[len(body):]

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
