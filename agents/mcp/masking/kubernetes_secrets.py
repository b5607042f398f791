"""Structural masking of Kubernetes Secrets in YAML and JSON text.

Regexes cannot tell a Secret's `data:` from a ConfigMap's, so this masker reads
the structure: every `data`/`stringData` value of an object whose `kind` is
`Secret` becomes `[MASKED_SECRET_DATA]`, keys are kept, other kinds are left
byte-for-byte intact. It works on text as tools return it: whole documents,
`kind: List` / `items`, multi-document YAML, YAML or JSON embedded among other
lines, and JSON inside the `last-applied-configuration` annotation.

JSON objects that hold a Secret are re-serialised (indentation preserved where
it can be detected); YAML is rewritten line by line so nothing else moves.
"""

from __future__ import annotations

import json
import re
from typing import Any

SECRET_DATA_MASK = "[MASKED_SECRET_DATA]"
# In YAML the mask is quoted so the masked document still parses, with a string where the value was.
_YAML_MASK = f"'{SECRET_DATA_MASK}'"
_DATA_KEYS = ("data", "stringData")
# Cheap pre-checks: text without these cannot contain a Secret, so the common case costs one search.
_SECRET_HINT = re.compile(r"""\bkind\\?["']?\s*\\?["']?\s*:\s*\\?["']?Secret\b""")
_JSON_SECRET_HINT = re.compile(r"""\\?"kind\\?"\s*:\s*\\?"Secret\\?\"""")
_YAML_KIND_SECRET = re.compile(r"""^(?P<indent>[ ]*)(?P<dash>(?:-[ ]+)*)kind:[ \t]*["']?Secret["']?[ \t]*(?:#.*)?$""")
_YAML_DATA_KEY = re.compile(r"^(?P<key>data|stringData):[ \t]*(?P<rest>.*)$")
_YAML_CHILD = re.compile(r"""^(?P<key>(?:"[^"]*"|'[^']*'|[^:#\s][^:]*?)):(?P<sep>[ \t]+|$)(?P<rest>.*)$""")
_DOC_BOUNDARY = re.compile(r"^(?:---|\.\.\.)(?:\s.*)?$")


def mask_kubernetes_secrets(text: str) -> str:
    """Mask Secret data in every YAML or JSON Secret found in `text`."""
    if not _SECRET_HINT.search(text) and not _JSON_SECRET_HINT.search(text):
        return text
    text = _mask_json_spans(text)
    if _SECRET_HINT.search(text):
        text = _mask_yaml_lines(text)
    return text


# ---- JSON -------------------------------------------------------------------------------------

_DECODER = json.JSONDecoder()


def _mask_json_spans(text: str) -> str:
    """Find JSON objects anywhere in the text; rewrite only those that contain a Secret."""
    if not _JSON_SECRET_HINT.search(text):
        return text
    out: list[str] = []
    pos = 0
    start = text.find("{")
    while start != -1:
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        span = text[start:end]
        if _JSON_SECRET_HINT.search(span):
            masked, changed = _mask_value(value)
            if changed:
                out.append(text[pos:start])
                out.append(_dump_like(masked, span, _line_indent(text, start)))
                pos = end
        start = text.find("{", end)
    out.append(text[pos:])
    return "".join(out)


def _mask_value(value: Any) -> tuple[Any, bool]:
    """Walk a decoded JSON value; mask Secret objects and Secrets nested in string values."""
    if isinstance(value, list):
        results = [_mask_value(v) for v in value]
        return [r[0] for r in results], any(r[1] for r in results)
    if isinstance(value, str):
        if "Secret" in value and ("{" in value or "kind:" in value):
            masked = mask_kubernetes_secrets(value)
            return masked, masked != value
        return value, False
    if not isinstance(value, dict):
        return value, False
    changed = False
    result: dict[str, Any] = {}
    is_secret = value.get("kind") == "Secret"
    for key, item in value.items():
        if is_secret and key in _DATA_KEYS and isinstance(item, dict):
            result[key] = {k: SECRET_DATA_MASK for k in item}
            changed = changed or bool(item)
        else:
            result[key], item_changed = _mask_value(item)
            changed = changed or item_changed
    return result, changed


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    line = text[line_start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _dump_like(value: Any, original: str, base_indent: str) -> str:
    """Serialise `value` in the layout of `original`: compact one-liner or indented block."""
    if "\n" not in original:
        separators = (", ", ": ") if '": ' in original else (",", ":")
        return json.dumps(value, ensure_ascii=False, separators=separators)
    second = original.split("\n", 1)[1]
    step = len(second) - len(second.lstrip(" ")) - len(base_indent)
    dumped = json.dumps(value, ensure_ascii=False, indent=max(step, 1))
    return dumped.replace("\n", "\n" + base_indent)


# ---- YAML -------------------------------------------------------------------------------------


def _key_column(line: str) -> tuple[int, int]:
    """(leading spaces, column where the mapping key starts after any `- ` list markers)."""
    spaces = len(line) - len(line.lstrip(" "))
    column = spaces
    rest = line[spaces:]
    while rest.startswith("- ") or rest == "-":
        stripped = rest[1:].lstrip(" ")
        column += len(rest) - len(stripped)
        rest = stripped
    return spaces, column


def _is_blank(line: str | None) -> bool:
    if line is None:
        return True
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _mapping_extent(lines: list[str | None], index: int, column: int) -> tuple[int, int]:
    """Lines [first, last) of the mapping whose keys start at `column` and that contains line `index`."""
    first = index
    own = lines[index] or ""
    _, own_column = _key_column(own)
    if own_column == column and len(own) - len(own.lstrip(" ")) < column:
        return index, _extent_end(lines, index, column)  # the `- kind: Secret` line opens the item
    i = index - 1
    while i >= 0:
        line = lines[i]
        if line is None or _is_blank(line):
            i -= 1
            continue
        spaces, key_col = _key_column(line)
        if _DOC_BOUNDARY.match(line) or key_col < column:
            break
        first = i
        if spaces < column:  # `- key:` opening this list item
            break
        i -= 1
    return first, _extent_end(lines, index, column)


def _extent_end(lines: list[str | None], index: int, column: int) -> int:
    i = index + 1
    while i < len(lines):
        line = lines[i]
        if line is not None and not _is_blank(line):
            spaces = len(line) - len(line.lstrip(" "))
            if _DOC_BOUNDARY.match(line) or spaces < column:
                break
        i += 1
    return i


def _mask_yaml_lines(text: str) -> str:
    lines: list[str | None] = list(text.split("\n"))
    for index, line in enumerate(lines):
        if line is None:
            continue
        match = _YAML_KIND_SECRET.match(line)
        if not match:
            continue
        column = len(match.group("indent")) + len(match.group("dash"))
        first, end = _mapping_extent(lines, index, column)
        _mask_yaml_mapping(lines, first, end, column)
    # None marks continuation lines of masked multi-line values: they are part of the secret.
    return "\n".join(line for line in lines if line is not None)


def _mask_yaml_mapping(lines: list[str | None], first: int, end: int, column: int) -> None:
    """Mask the children of `data:`/`stringData:` keys sitting at `column` in lines[first:end]."""
    i = first
    while i < end:
        line = lines[i]
        if line is None or _is_blank(line):
            i += 1
            continue
        _, key_col = _key_column(line)
        match = _YAML_DATA_KEY.match(line[key_col:]) if key_col == column else None
        if not match:
            i += 1
            continue
        rest = match.group("rest").strip()
        if rest and not rest.startswith("#"):
            lines[i] = line[: key_col + len(match.group("key")) + 1] + " " + _mask_flow_mapping(rest)
            i += 1
            continue
        i = _mask_block_children(lines, i + 1, end, column)


def _mask_block_children(lines: list[str | None], start: int, end: int, parent_column: int) -> int:
    child_column = -1
    i = start
    while i < end:
        line = lines[i]
        if line is None or _is_blank(line):
            i += 1
            continue
        spaces = len(line) - len(line.lstrip(" "))
        if spaces <= parent_column:
            break
        if child_column < 0:
            child_column = spaces
        match = _YAML_CHILD.match(line[spaces:]) if spaces == child_column else None
        if match:
            lines[i] = line[:spaces] + match.group("key") + ": " + _YAML_MASK
        else:
            lines[i] = None
        i += 1
    return i


def _mask_flow_mapping(rest: str) -> str:
    """`{a: x, b: y}` → `{a: '[MASKED_SECRET_DATA]', b: …}`; anything else becomes the mask."""
    if rest in ("{}", "null", "~"):
        return rest
    if rest.startswith("{") and rest.rstrip().endswith("}"):
        keys = [part.split(":", 1)[0].strip() for part in rest.strip()[1:-1].split(",") if ":" in part]
        if keys:
            return "{" + ", ".join(f"{k}: {_YAML_MASK}" for k in keys) + "}"
    return _YAML_MASK
