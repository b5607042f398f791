"""Quoting outside text in prose: short enough to read, never cut in the middle of a word."""

from __future__ import annotations

ELLIPSIS = "…"


def quote(text: str, limit: int) -> str:
    """`text` when it fits in `limit` characters, else its longest prefix that ends on a whole word, with an
    ellipsis (a single word longer than the limit is cut, with the ellipsis saying so)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    cut = head.rfind(" ")
    kept = (head[:cut] if cut > 0 else text[:limit]).rstrip(" ,;:-(")
    return kept + ELLIPSIS
