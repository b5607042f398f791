"""Canonical `server.tool` names ↔ the names LLM APIs accept.

Gemini, OpenAI and Anthropic all reject dots in function names (OpenAI and
Anthropic allow only `[A-Za-z0-9_-]{1,64}`), so tools travel as `server__tool`
and come back through a per-request map; names the map does not know are
decoded by the `__` convention.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .types import ToolDefinition

SEPARATOR = "__"
MAX_NAME_LEN = 64  # the strictest vendor limit (OpenAI, Anthropic)
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def to_wire(name: str) -> str:
    """`server.tool` → `server__tool` (other invalid characters become `_`)."""
    return _INVALID.sub("_", name.replace(".", SEPARATOR, 1))[:MAX_NAME_LEN]


class ToolNameMap:
    """Both directions for the tools of one request."""

    def __init__(self, tools: Iterable[ToolDefinition] = ()) -> None:
        self._to_canonical: dict[str, str] = {}
        for tool in tools:
            self._to_canonical[to_wire(tool.name)] = tool.name

    def wire(self, canonical: str) -> str:
        return to_wire(canonical)

    def canonical(self, wire_name: str) -> str:
        if wire_name in self._to_canonical:
            return self._to_canonical[wire_name]
        if wire_name in self._to_canonical.values():
            return wire_name  # the model echoed the canonical name itself
        if "." not in wire_name and SEPARATOR in wire_name:
            return wire_name.replace(SEPARATOR, ".", 1)
        return wire_name
