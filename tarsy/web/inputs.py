"""Text the database and the wire cannot carry, refused where it enters with the field named.

PostgreSQL text refuses NUL (U+0000). A lone surrogate (U+D800–U+DFFF: JSON's `\\ud800` escape, or a percent-encoded
surrogate in a URL) is no Unicode text at all and fails when a query or a response is encoded. Either would
otherwise surface as a 500 deep inside a query or a response; here it is a 400 naming the parameter or field.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote_to_bytes

DEFAULT_PAGE_SIZE = 25  # rows per page of a list, over REST and on the dashboard
MAX_PAGE_SIZE = 100  # bounds the cost of one request
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_ASCII_DIGITS = re.compile(r"[0-9]{1,18}")  # 18 digits: any such number fits a PostgreSQL bigint


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text, or None."""
    match = _UNSTORABLE.search(value)
    if match is None:
        return None
    if match.group() == "\x00":
        return "Contains a NUL character (\\u0000), which text cannot hold."
    return f"Contains a lone surrogate (U+{ord(match.group()):04X}), which is not valid Unicode."


def printable(value: str) -> str:
    """`value` safe to echo in an error message (unstorable characters replaced)."""
    return _UNSTORABLE.sub("\ufffd", value)


def json_problem(document: Any) -> tuple[str, str] | None:
    """The first string, key or value, of a parsed JSON document that cannot be stored: (dotted path, reason).
    Iterative, so a deeply nested document cannot exhaust the stack."""
    pending: list[tuple[str, Any]] = [("", document)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return path or "body", problem
        elif isinstance(item, dict):
            for key, child in item.items():
                where = f"{path}.{printable(key)}" if path else printable(key)
                problem = text_problem(key)
                if problem:
                    return where, f"Key {problem[0].lower()}{problem[1:]}"
                pending.append((where, child))
        elif isinstance(item, list):
            pending.extend((f"{path}.{index}" if path else str(index), child) for index, child in enumerate(item))
    return None


def query_problems(query_string: str) -> dict[str, list[str]]:
    """Problems of each query parameter, read from the raw query string: Django decodes broken UTF-8 (an encoded
    surrogate included) to U+FFFD silently, so only the raw bytes show it."""
    problems: dict[str, list[str]] = {}
    for part in query_string.split("&"):
        name, _, value = part.partition("=")
        try:
            decoded = [unquote_to_bytes(text.replace("+", " ")).decode("utf-8") for text in (name, value)]
        except UnicodeDecodeError:
            label = unquote_to_bytes(name.replace("+", " ")).decode("utf-8", "replace")
            problems.setdefault(printable(label), []).append("Not valid UTF-8 (for example an encoded surrogate).")
            continue
        problem = text_problem(decoded[0]) or text_problem(decoded[1])
        if problem:
            problems.setdefault(printable(decoded[0]), []).append(problem)
    return problems


def ascii_int(raw: str) -> int | None:
    """A non-negative integer written in ASCII digits, or None. `int()` also reads Arabic-Indic "١٢", "+1", " 1" and
    "1_000", and `str.isdigit()` passes "²", which `int()` then refuses."""
    return int(raw) if _ASCII_DIGITS.fullmatch(raw) else None
