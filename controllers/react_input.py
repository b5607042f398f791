"""ReAct `Action Input` text → tool arguments: a JSON object, flat `key: value` / `key=value` pairs, nested YAML,
or — when no structure fits — the raw text.

Models write arguments in many shapes: a JSON object; `key: value` lines; `key=value, key2=value2`; both mixed on
one line (`namespace: kube-system, pod=coredns-abc`); `key=v key2=v2`; and sometimes an invented tool result after
them. Values written as JSON (`3`, `true`, `["a","b"]`) or as a literal in any case (`True`, `NULL`, `None`) arrive
typed, everything else as text; a bare scalar or list (`42`, `["a","b"]`) is the `{"input": …}` of a one-argument
call. A reply is
untrusted text, so every step is linear in its length (no backtracking-prone regex) and YAML is loaded only
when small, shallow and alias-free.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml

# Pairs and YAML are parsed in Python, about a microsecond per piece; arguments this long are no hand-written tool
# call, so past it only a JSON object (parsed in C) is structured and anything else stays raw text.
MAX_STRUCTURED_CHARS = 64 * 1024

# An invented continuation after the arguments: an `Observation:` (any case, mid-line too) or a `[Based on …]` note.
_INVENTED = re.compile(r"(?<![\w-])observation[ \t]*+:|\[[ \t]*+based[ \t]++on\b", re.IGNORECASE)
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it
# libyaml's parser is quadratic in flow nesting and the composer recurses in C (`[` * 50 000 crashes the process);
# aliases expand exponentially once serialised. Only shallow, alias-free YAML is loaded.
MAX_YAML_DEPTH = 16
_YAML_HAZARD = re.compile(rf"(?<![^\s\[{{,])[&*]\S|(?:[-?][ \t]++){{{MAX_YAML_DEPTH}}}")
_BRACKET = re.compile(r"[\[\]{}]")
_FENCE_RUN = re.compile(r"`{3,}+|~{3,}+")
# One `key: value` or `key=value` pair at the start of a segment. A colon separates only when followed by
# whitespace (`url: http://x` is one pair), `==` never does (`up == 0` is no pair).
_PAIR = re.compile(r"""[ \t]*+(?P<key>[A-Za-z_][\w.-]*+|"[^"\n]*+"|'[^'\n]*+')[ \t]*+(?P<sep>=(?!=)|:(?=\s|\Z))""")
_EQUALS_PAIR = re.compile(r"[A-Za-z_][\w.-]*+[ \t]*+=(?!=)")  # `key=`: starts a pair after whitespace, or a selector
# Quoted strings and brackets, within which separators do not split. A single quote opens a string only after a
# non-word character, so the apostrophe in "it's" does not.
_QUOTED = r""""(?:[^"\\\n]|\\.)*+"|(?<!\w)'(?:[^'\\\n]|\\.)*+'"""
_SPLITTERS = {seps: re.compile(rf"{_QUOTED}|(?P<open>[\[{{(])|(?P<close>[\]}})])|(?P<sep>[{seps}])")
              for seps in ("\n", ",", " \t")}


def parse_action_input(raw: str) -> dict[str, Any] | str:
    """Tool arguments from the Action Input text; the raw text when no structure fits."""
    text = _unfence(raw.strip())
    if not text:
        return {}
    as_json = _json_object(text)
    if as_json is not None:
        return as_json
    text = _cut_invented(text)
    if not text:
        return {}
    literal, value = _literal(text)
    if literal and not isinstance(value, dict):
        return {"input": value}  # a bare `42`, `"web-1"`, `true` or `["a", "b"]`: one argument, as raw text is
    if len(text) > MAX_STRUCTURED_CHARS:
        return text
    parsers = (_yaml_block, _pairs, _yaml_flow) if _has_block_structure(text) else (_pairs, _yaml_flow)
    for parser in parsers:
        value = parser(text)
        if value is not None:
            return value
    return text


def _cut_invented(text: str) -> str:
    match = _INVENTED.search(text)
    return text[: match.start()].strip() if match else text


def _unfence(text: str) -> str:
    """The content of a leading code fence (anything after its closing fence is dropped); inline backticks removed."""
    opening = _FENCE_RUN.match(text)
    if not opening:
        return text.strip("`").strip() if text.startswith("`") and text.endswith("`") else text
    marker = opening.group()
    first, newline, rest = text[opening.end():].partition("\n")
    if not newline:  # ```{"a": 1}```
        return first.removesuffix(marker).strip()
    lines = rest.split("\n")
    for index, line in enumerate(lines):
        closing = line.strip()
        if closing.startswith(marker) and not closing.strip(marker[0]):
            return "\n".join(lines[:index]).strip()
    return rest.strip()


# ---- JSON ----------------------------------------------------------------------------------------------------------


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN/Infinity: no tool takes them, and jsonb cannot store them


_DECODER = json.JSONDecoder(parse_float=_finite_float, parse_constant=_no_constants)


def _json_value(text: str) -> tuple[bool, Any]:
    try:
        return True, _DECODER.decode(text)
    except (ValueError, RecursionError):
        return False, None


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        value, _ = _DECODER.raw_decode(text)  # text after the object (a remark, an invented result) is ignored
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


# ---- YAML (nested structure, single-quoted flow mappings) ----------------------------------------------------------


def _has_block_structure(text: str) -> bool:
    """Indented or `- item` lines: nested YAML, which the flat pairs below cannot represent."""
    return any(line[:1] in (" ", "\t") and line.strip() or line.startswith("- ") for line in text.split("\n")[1:])


def _yaml_is_safe(text: str) -> bool:
    if _YAML_HAZARD.search(text):
        return False
    depth = 0
    for match in _BRACKET.finditer(text):
        depth = depth + 1 if match.group() in "[{" else max(depth - 1, 0)
        if depth > MAX_YAML_DEPTH:
            return False
    return True


def _yaml(text: str) -> Any:
    if not _yaml_is_safe(text):
        return None
    try:
        value = yaml.load(text, Loader=_YAML_LOADER)
        return json.loads(json.dumps(value, default=str, allow_nan=False))  # dates etc. become plain JSON values
    except (yaml.YAMLError, ValueError, RecursionError):
        return None


def _yaml_block(text: str) -> dict[str, Any] | None:
    value = _yaml(text)
    return value if isinstance(value, dict) and value else None


def _yaml_flow(text: str) -> dict[str, Any] | None:
    """`{'namespace': 'a'}`: a mapping JSON refuses (single quotes, bare keys) but YAML reads."""
    return _yaml_block(text) if text.startswith("{") else None


# ---- flat pairs ----------------------------------------------------------------------------------------------------


def _split(text: str, seps: str) -> tuple[list[str], bool]:
    """`text` cut at each of `seps` outside brackets and quoted strings; and whether its brackets balance."""
    parts, start, depth = [], 0, 0
    for match in _SPLITTERS[seps].finditer(text):
        if match.group("open"):
            depth += 1
        elif match.group("close"):
            depth = max(depth - 1, 0)
        elif match.group("sep") and depth == 0:
            parts.append(text[start:match.start()])
            start = match.start()  # the separator stays with the part it opens, so parts join back losslessly
    parts.append(text[start:])
    return parts, depth == 0


def _lines(text: str) -> list[str]:
    """Lines, except that a bracket opened on one line may close on a later one (a JSON list over several lines);
    an unbalanced bracket must not swallow the rest of the input, so then plain lines."""
    lines, balanced = _split(text, "\n")
    return [line.removeprefix("\n") for line in lines] if balanced else text.split("\n")


def _pairs(text: str) -> dict[str, Any] | None:
    """`key: value` / `key=value` pairs separated by newlines or commas (`key=v key2=v2` also by spaces).

    The input must start with a pair. A line that starts with no pair is dropped and the other lines still count; a
    comma-separated piece that is no pair continues the value before it (`msg: hello, world`), as does `k=v` after a
    selector-like value (`labelSelector: app=web,tier=frontend`).
    """
    values: dict[str, list[str]] = {}  # each value's pieces, joined once at the end
    for number, line in enumerate(_lines(text)):
        last: list[str] | None = None
        for index, piece in enumerate(_split(line, ",")[0]):
            match = _PAIR.match(piece, 1 if index else 0)
            if last is not None and (match is None or _continues_selector(last, match)):
                last.append(piece)
                continue
            if match is None:
                if number == 0:
                    return None  # not a list of pairs at all
                break  # a malformed line: dropped
            for key, value in _pair_values(match, piece):
                values[key] = last = value
    return {key: _typed("".join(value)) for key, value in values.items()} or None


def _continues_selector(value: list[str], match: re.Match[str]) -> bool:
    """`key=v` right after a comma, in a value that is itself `k=v`, is the next term of a selector
    (`labels=app=web,tier=frontend`); after a comma and a space it is the next pair (`labels=app=nginx, replicas=3`)."""
    piece = match.string
    return (match.group("sep") == "=" and _EQUALS_PAIR.match(value[0].strip()) is not None
            and not piece[1:2].isspace())


def _pair_values(match: re.Match[str], piece: str) -> list[tuple[str, list[str]]]:
    """The pair at the start of `piece`; after `key=`, whitespace also separates pairs (`key=v key2=v2`)."""
    key, value = match.group("key").strip("'\""), piece[match.end():]
    if match.group("sep") == ":":
        return [(key, [value])]
    words = _split(value.strip(), " \t")[0]
    pairs = [(key, [words[0]])]
    for word in words[1:]:
        if pairs[-1][1][0] and _EQUALS_PAIR.match(word, 1):
            name, _, rest = word.partition("=")
            pairs.append((name.strip(), [rest]))
        else:
            pairs[-1][1].append(word)
    return pairs


# Literals models write in other languages' spelling (`True`, `FALSE`, `NULL`, `None`): the values they mean.
_WORD_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "none": None}


def _literal(text: str) -> tuple[bool, Any]:
    """A JSON value, or a true/false/null/none literal in any case; (False, None) for anything else."""
    word = text.lower()
    if word in _WORD_LITERALS:
        return True, _WORD_LITERALS[word]
    return _json_value(text)


def _typed(value: str) -> Any:
    """A value written as JSON or as a literal in any case keeps its type (`3`, `True`, `NULL`, `["a","b"]`);
    quotes around text are dropped."""
    value = value.strip().rstrip(",;").strip()
    ok, parsed = _literal(value)
    if ok:
        return parsed
    if value[:1] in ("[", "{"):
        flow = _yaml(value)  # ['a', 'b'], {a: 1}
        if isinstance(flow, (list, dict)):
            return flow
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
