"""Structural masking of Kubernetes Secrets in YAML and JSON text.

Regexes cannot tell a Secret's `data:` from a ConfigMap's, so this masker reads
the structure: every `data`/`stringData` value of an object whose `kind` is
`Secret` becomes `[MASKED_SECRET_DATA]`, keys are kept, other kinds are left
byte-for-byte intact. It reads text as tools return it, in three passes:

1. Secrets escaped inside a quoted string (a ConfigMap value, the
   `last-applied-configuration` annotation, a log field): the string is decoded,
   masked by these same passes, and encoded again.
2. JSON and YAML flow mappings (`{kind: Secret, data: {…}}`), whole or embedded
   among other text, compact or indented, also as `\\"`-escaped JSON: a token
   scanner with an explicit stack, which replaces only the data values in place.
3. YAML block documents (multi-document, `kind: List`, CRLF line endings),
   rewritten line by line so nothing else moves.

Each pass runs only when a cheap, linear pre-check finds a Secret marker. Nesting
deeper than MAX_NESTING (or escaping deeper than MAX_ESCAPE_DEPTH) raises
MaskingError: structure that deep is not output anyone reads, and guessing at it
could leak, so callers withhold or refuse it.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

SECRET_DATA_MASK = "[MASKED_SECRET_DATA]"
MAX_NESTING = 100
MAX_ESCAPE_DEPTH = 8
_DATA_KEYS = ("data", "stringData")
# In YAML the mask is quoted so the masked document still parses, with a string where the value was.
_YAML_MASK = f"'{SECRET_DATA_MASK}'"


class MaskingError(ValueError):
    """Text that cannot be masked safely (nested or escaped too deeply to read with confidence)."""


# ---- pre-checks (each starts at a literal and is possessive: linear) ----------------------------------------

_ANY_HINT = re.compile(r"""kind(?:\\*+["'])?[ \t\r\n]*+:[ \t\r\n]*+(?:\\*+["'])?Secret\b""")
_ESCAPED_HINT = re.compile(
    r"""\\++"kind\\++"[ \t]*+:[ \t]*+\\++"Secret\\++\""""
    r"""|(?:\\++[nr]|")[ \t]*+(?:-[ \t]++)*+kind:[ \t]*+(?:\\*+')?Secret(?:\\*+')?(?=[ \t]*+(?:\\++[nr"]|"))"""
)
_BLOCK_HINT = re.compile(r"""^[ \t]*+(?:-[ \t]++)*+kind:[ \t]*+["']?Secret["']?[ \t]*+(?:#[^\n]*+)?\r?$""", re.M)


def mask_kubernetes_secrets(text: str, _depth: int = 0) -> str:
    """Mask Secret data in every YAML or JSON Secret found in `text`."""
    if not _ANY_HINT.search(text):
        return text
    if _depth > MAX_ESCAPE_DEPTH:
        raise MaskingError(f"Kubernetes Secret escaped more than {MAX_ESCAPE_DEPTH} levels deep")
    if _ESCAPED_HINT.search(text):
        text = _mask_escaped_strings(text, _depth)
    if "{" in text:
        text = _mask_flow(text)
    if _BLOCK_HINT.search(text):
        text = _mask_yaml_lines(text)
    return text


# ---- 1. Secrets escaped inside quoted strings ---------------------------------------------------------------

_DQ_STRING = re.compile(r'"(?:[^"\\\r\n]++|\\.)*+"')


def _opening_quote(text: str, lo: int, hi: int) -> int:
    """Position of the last unescaped `"` in text[lo:hi], or -1."""
    pos = hi
    while True:
        pos = text.rfind('"', lo, pos)
        if pos == -1:
            return -1
        run = pos
        while run > lo and text[run - 1] == "\\":
            run -= 1
        if (pos - run) % 2 == 0:
            return pos


def _mask_escaped_strings(text: str, depth: int) -> str:
    """Decode each double-quoted string that holds an escaped Secret, mask it, and encode it again."""
    out: list[str] = []
    pos = 0
    floor = 0  # an enclosing string starting before the previous hint would have enclosed that hint too
    for hint in _ESCAPED_HINT.finditer(text):
        start = hint.start()
        if start < pos:
            continue
        quote = _opening_quote(text, max(floor, pos), start + 1 if text[start] == '"' else start)
        floor = start
        if quote == -1:
            continue
        string = _DQ_STRING.match(text, quote)
        if string is None or string.end() <= start:
            continue
        out.append(text[pos:quote])
        out.append(_remask_string(string.group(0), depth))
        pos = string.end()
    out.append(text[pos:])
    return "".join(out)


def _remask_string(quoted: str, depth: int) -> str:
    try:
        decoded = json.loads(quoted, strict=False)
    except ValueError:  # escapes JSON does not know (YAML's `\x41`): keep nothing of a string that holds a Secret
        return f'"{SECRET_DATA_MASK}"'
    masked = mask_kubernetes_secrets(decoded, depth + 1)
    return quoted if masked == decoded else json.dumps(masked, ensure_ascii=False)


# ---- 2. JSON and YAML flow mappings -------------------------------------------------------------------------

_FLOW_TOKEN = re.compile(
    r"""(?P<open>[{\[])|(?P<close>[}\]])|(?P<comma>,)|(?P<colon>:)|(?P<space>\s++)"""
    r"""|(?P<eq>\\++"(?:[^"\\\r\n]++|\\++(?!"))*+\\++")"""
    r"""|(?P<dq>"(?:[^"\\\r\n]++|\\.)*+")"""
    r"""|(?P<sq>'(?:[^'\r\n]++|'')*+')"""
    r"""|(?P<plain>[^\s{}\[\],:"'\\]++(?::(?=[^\s,{}\[\]])[^\s{}\[\],:"'\\]*+)*+)"""
    r"""|(?P<other>.)""",
    re.S,
)
_SCALARS = ("eq", "dq", "sq", "plain")


@dataclass
class _Frame:
    start: int
    mapping: bool
    data: bool = False  # the `data`/`stringData` mapping of its parent
    swallow: bool = False  # a collection that is itself a data value: masked whole
    key: str | None = None
    last: str | None = None
    state: str = "key"  # key → value (after `:`) → done (after the value, until `,`)
    quote: str = "'"
    secret: bool = False
    values: list[tuple[int, int, str]] = field(default_factory=list)  # data values: (start, end, quote)
    pending: list[tuple[int, int, str]] = field(default_factory=list)  # from data children, kept if Secret


def _unquote(kind: str, token: str) -> str:
    if kind == "plain":
        return token
    if kind == "eq":
        return token.strip("\\")[1:-1]
    return token[1:-1]


def _quote_of(kind: str, token: str) -> str:
    if kind == "eq":
        return token[: token.index('"') + 1]
    return {"dq": '"', "sq": "'"}.get(kind, "'")


def _mask_flow(text: str) -> str:
    """Scan `{…}` regions with an explicit stack; replace data values of mappings whose kind is Secret."""
    replacements: list[tuple[int, int, str]] = []
    stack: list[_Frame] = []
    pos = text.find("{")
    while pos != -1 and pos < len(text):
        if not stack:
            pos = text.find("{", pos)
            if pos == -1:
                break
        token = _FLOW_TOKEN.match(text, pos)
        kind, value, end = token.lastgroup, token.group(0), token.end()
        pos = end
        frame = stack[-1] if stack else None
        if kind == "open":
            if len(stack) >= MAX_NESTING:
                raise MaskingError(f"JSON or YAML holding a Secret is nested more than {MAX_NESTING} levels deep")
            expecting_value = frame is not None and frame.mapping and frame.state == "value"
            child = _Frame(start=token.start(), mapping=value == "{")
            if expecting_value and frame.data:
                child.swallow = True
            elif expecting_value and child.mapping and frame.key in _DATA_KEYS:
                child.data = True
            stack.append(child)
        elif kind == "close":
            if frame is None:
                continue
            stack.pop()
            parent = stack[-1] if stack else None
            if frame.secret:
                replacements.extend(frame.pending)
            if parent is not None:
                if frame.data:
                    parent.pending.extend(frame.values)
                elif frame.swallow:
                    parent.values.append((frame.start, end, parent.quote))
                if parent.mapping and parent.state == "value":
                    parent.state = "done"
        elif frame is None or not frame.mapping:
            continue
        elif kind == "comma":
            frame.key = frame.last = None
            frame.state = "key"
        elif kind == "colon":
            if frame.state == "key" and frame.last is not None:
                frame.key, frame.state = frame.last, "value"
        elif kind in _SCALARS:
            if frame.state == "key":
                frame.last = _unquote(kind, value)
                frame.quote = _quote_of(kind, value)
            elif frame.state == "value":
                if frame.key == "kind" and _unquote(kind, value) == "Secret":
                    frame.secret = True
                if frame.data:
                    frame.values.append((token.start(), end, _quote_of(kind, value)))
                frame.state = "done"
            elif frame.data and frame.values:  # a plain value running over several tokens
                frame.values[-1] = (frame.values[-1][0], end, frame.values[-1][2])
    return _apply_replacements(text, replacements)


def _apply_replacements(text: str, replacements: list[tuple[int, int, str]]) -> str:
    if not replacements:
        return text
    out: list[str] = []
    pos = 0
    for start, end, quote in sorted(replacements):
        if start < pos:
            continue
        out.append(text[pos:start])
        out.append(f"{quote}{SECRET_DATA_MASK}{quote}")  # an escaped quote closes as it opened
        pos = end
    out.append(text[pos:])
    return "".join(out)


# ---- 3. YAML block documents --------------------------------------------------------------------------------

_YAML_KIND_SECRET = re.compile(
    r"""^(?P<indent>[ ]*+)(?P<dash>(?:-[ ]++)*+)kind:[ \t]*+["']?Secret["']?[ \t]*+(?:#[^\r\n]*+)?\r?$""", re.M
)
_YAML_CHILD = re.compile(r"""^(?P<key>(?:"[^"]*+"|'[^']*+'|[^:#\s][^:]*?)):(?P<sep>[ \t]+|$)(?P<rest>.*)$""")
_DOC_BOUNDARY = re.compile(r"^(?:---|\.\.\.)(?:[ \t][^\n]*+)?\r?$", re.M)
_DATA_KEY = re.compile(r"(?P<key>data|stringData):[ \t]*+(?P<rest>.*)$")


class _Lines:
    """The lines of a YAML text with what the extent walks need per line, computed once (no `\\r`)."""

    def __init__(self, text: str):
        raw = text.split("\n")
        self.crlf = "\r" in text
        self.cr = [line.endswith("\r") for line in raw] if self.crlf else []
        lines = [line[:-1] if line.endswith("\r") else line for line in raw] if self.crlf else raw
        self.lines: list[str | None] = lines  # type: ignore[assignment]
        self.spaces = [len(line) - len(line.lstrip(" ")) for line in lines]
        self.blank = [not s or s[0] == "#" for s in map(str.strip, lines)]
        self.starts = list(accumulate(map(len, raw[:-1]), lambda start, n: start + n + 1, initial=0))
        self.boundaries = {self.index(m.start()) for m in _DOC_BOUNDARY.finditer(text)}

    def index(self, offset: int) -> int:
        """The line holding text offset `offset`."""
        return bisect_right(self.starts, offset) - 1

    def key_column(self, i: int) -> int:
        """Column where the mapping key of line i starts, after any `- ` list markers."""
        line = self.lines[i] or ""
        column = self.spaces[i]
        rest = line[column:]
        while rest.startswith("- ") or rest == "-":
            stripped = rest[1:].lstrip(" ")
            column += len(rest) - len(stripped)
            rest = stripped
        return column

    def text(self) -> str:
        # None marks continuation lines of masked multi-line values: they are part of the secret.
        if not self.crlf:
            return "\n".join(line for line in self.lines if line is not None)
        return "\n".join(line + ("\r" if cr else "") for line, cr in zip(self.lines, self.cr, strict=True)
                         if line is not None)


def _mask_yaml_lines(text: str) -> str:
    doc = _Lines(text)
    done: dict[int, int] = {}  # column → text offset where the last mapping masked at that column ends
    for match in _YAML_KIND_SECRET.finditer(text):
        column = match.end("dash") - match.start()
        if match.start() < done.get(column, 0):
            continue  # a repeated `kind:` inside a mapping already masked
        index = doc.index(match.start())
        first, end = _mapping_extent(doc, index, column)
        _mask_yaml_mapping(doc, first, end, column)
        done[column] = doc.starts[end] if end < len(doc.starts) else len(text)
    return doc.text()


def _mapping_extent(doc: _Lines, index: int, column: int) -> tuple[int, int]:
    """Lines [first, end) of the mapping whose keys start at `column` and that contains line `index`."""
    if doc.spaces[index] < column:
        return index, _extent_end(doc, index, column)  # the `- kind: Secret` line opens the list item
    first = i = index
    while i > 0:
        i -= 1
        if doc.blank[i]:
            continue
        if i in doc.boundaries:
            break
        if doc.spaces[i] < column:
            if doc.key_column(i) >= column:
                first = i  # `- key:` opening this list item
            break
        first = i
    return first, _extent_end(doc, index, column)


def _extent_end(doc: _Lines, index: int, column: int) -> int:
    blank, spaces, boundaries = doc.blank, doc.spaces, doc.boundaries
    i, n = index + 1, len(blank)
    while i < n and (blank[i] or (spaces[i] >= column and i not in boundaries)):
        i += 1
    return i


def _mask_yaml_mapping(doc: _Lines, first: int, end: int, column: int) -> None:
    """Mask the children of `data:`/`stringData:` keys sitting at `column` in lines[first:end]."""
    lines, spaces = doc.lines, doc.spaces
    i = first
    while i < end:
        line = lines[i]
        if line is None or not line.startswith(_DATA_KEYS, column):
            i += 1
            continue
        opener = i == first and spaces[i] < column  # `- data:` opening a list item
        match = _DATA_KEY.match(line, column) if spaces[i] == column or opener else None
        if match is None or doc.key_column(i) != column:
            i += 1
            continue
        rest = match.group("rest").strip()
        if rest and not rest.startswith("#"):
            doc.lines[i] = line[: match.end("key") + 1] + " " + _mask_flow_mapping(rest)
            i += 1
            continue
        i = _mask_block_children(doc, i + 1, end, column)


def _mask_block_children(doc: _Lines, start: int, end: int, parent_column: int) -> int:
    child_column = -1
    i = start
    while i < end:
        line = doc.lines[i]
        if line is None or doc.blank[i]:
            i += 1
            continue
        spaces = doc.spaces[i]
        if spaces <= parent_column:
            break
        if child_column < 0:
            child_column = spaces
        match = _YAML_CHILD.match(line[spaces:]) if spaces == child_column else None
        if match:
            doc.lines[i] = line[:spaces] + match.group("key") + ": " + _YAML_MASK
        else:
            doc.lines[i] = None
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
