"""Readable text that a scenario's regex phrasing matches, for the adversarial suite.

An `expect.yaml` regex is a claim such as `catalog[^.]{0,60}(down|crash)`. The adversaries need a sentence that
makes the claim, so this walks the small regex subset scenarios use (literals, groups with alternatives, classes,
windows, optional parts, escapes) and writes one sample per choice of alternative, filling a window with a word
(`is`, `being`, …) instead of random characters. Every sample is checked against the regex; one that does not
match is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

ESCAPES = {"d": "7", "w": "x", "s": " ", "b": "", "B": "", ".": ".", "-": "-", "'": "'", "/": "/"}
MAX_SAMPLES = 6


class _Parser:
    """Turns a pattern into nested lists: a sequence is a list of items; an item is a string or ('alt', [seqs])
    or ('window', min, max) or ('opt', seq)."""

    def __init__(self, pattern: str) -> None:
        self.text, self.pos = pattern, 0

    def parse(self) -> list:
        alternatives = self._alternatives()
        return [("alt", alternatives)]

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _alternatives(self) -> list[list]:
        seqs = [self._sequence()]
        while self._peek() == "|":
            self.pos += 1
            seqs.append(self._sequence())
        return seqs

    def _sequence(self) -> list:
        items: list = []
        while self._peek() not in ("", "|", ")"):
            items.append(self._quantified(self._atom()))
        return items

    def _atom(self):
        char = self._peek()
        self.pos += 1
        if char == "(":
            if self.text.startswith("?:", self.pos):
                self.pos += 2
            alternatives = self._alternatives()
            self.pos += 1  # ")"
            return ("alt", alternatives)
        if char == "[":
            end = self.text.index("]", self.pos + 1)
            body, self.pos = self.text[self.pos:end], end + 1
            return ("window", 0, 0) if body.startswith("^") else body.replace("\\", "")[0]
        if char == "\\":
            escaped = self._peek()
            self.pos += 1
            return ESCAPES.get(escaped, escaped)
        if char == ".":
            return ("window", 0, 0)
        return char

    def _quantified(self, atom):
        char = self._peek()
        if char and char in "?*+":
            self.pos += 1
            low = 1 if char == "+" else 0
            return ("window", low, 60) if isinstance(atom, tuple) and atom[0] == "window" else (
                ("opt", [atom]) if low == 0 else atom)
        if char == "{":
            end = self.text.index("}", self.pos)
            low, _, high = self.text[self.pos + 1:end].partition(",")
            self.pos = end + 1
            if isinstance(atom, tuple) and atom[0] == "window":
                return ("window", int(low or 0), int(high or low or 60))
            return atom * int(low) if isinstance(atom, str) else atom
        return atom


def _render(seq: list, choice: int, filler: str) -> str:
    out = []
    for item in seq:
        if isinstance(item, str):
            out.append(item)
        elif item[0] == "alt":
            alternatives = item[1]
            out.append(_render(alternatives[choice % len(alternatives)], choice, filler))
        elif item[0] == "opt":  # left out, unless it is the space between two words
            out.append(" " if item[1] == [" "] else "")
        else:  # a window: a word that reads as part of a sentence
            out.append(filler if item[2] >= len(filler) else " ")
    return "".join(out)


def samples(pattern: str, fillers: tuple[str, ...] = (" is ", " ")) -> Iterator[str]:
    """Distinct readable strings the pattern matches, at most MAX_SAMPLES."""
    try:
        tree = _Parser(pattern).parse()
    except (ValueError, IndexError):
        return
    seen: set[str] = set()
    for choice in range(MAX_SAMPLES):
        for filler in fillers:
            text = re.sub(r"\s+", " ", _render(tree, choice, filler)).strip()
            if text and text not in seen and re.search(pattern, text, re.I):
                seen.add(text)
                yield text
                break
