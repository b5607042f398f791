"""An alert's identity across repeats (fingerprint) and the group it belongs to (correlation key).

Pure functions over the masked alert data: a repeat of an alert differs from the first one in its timestamps and
counters ("restarting 5 times" then "6 times"), so those are left out before hashing; secrets were masked
already, so neither a fingerprint nor a group key is derived from a secret.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

# Key-name words that mark a timestamp or a counter (`startsAt`, `last_seen`, `restartCount`, `occurrences`).
_VOLATILE_WORDS = {"at", "time", "timestamp", "ts", "date", "seen", "count", "counter", "counters", "restarts",
                   "occurrences", "fired", "updated", "value", "values", "epoch"}
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b")
_EPOCH = re.compile(r"(?<![\w.])\d{10}(?:\d{3})?(?:\.\d+)?(?![\w.])")  # Unix seconds or milliseconds
# A count or a measurement ("5 times", "3 restarts", "93.2%"); other numbers ("HTTP 503", "alert 7", pod-7d9f)
# stay: two alerts that differ in them may be two problems, and folding them would lose one investigation.
_COUNTER = re.compile(r"(?<![\w.\-/])\d+(?:\.\d+)?(?:\s*%|\s*x\b|(?=\s+(?:times?|restarts?|occurrences?|events?"
                      r"|errors?|failures?|retries|attempts?|requests?)\b))", re.IGNORECASE)
_MISSING = object()


def _volatile_key(key: str) -> bool:
    return bool({w.lower() for w in _WORDS.findall(key)} & _VOLATILE_WORDS)


def _normal_text(text: str) -> str:
    text = _ISO_TIME.sub("<time>", text)
    text = _CLOCK.sub("<time>", text)
    text = _EPOCH.sub("<time>", text)
    return _COUNTER.sub("<n>", text).strip()


def normalised(data: Any) -> Any:
    """The alert without what changes between repeats: time- and counter-named keys dropped, timestamps,
    counts and percentages in text replaced."""
    if isinstance(data, dict):
        return {str(k): normalised(v) for k, v in data.items() if not _volatile_key(str(k))}
    if isinstance(data, list):
        return [normalised(v) for v in data]
    if isinstance(data, str):
        return _normal_text(data)
    return data


def field_value(data: Any, path: str) -> Any:
    """The value at a dotted path of the data (`labels.namespace`), or a missing marker."""
    value = data
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _digest(parts: Any) -> str:
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def derive_fingerprint(*, alert_type: str, data: Any, key: list[str]) -> str:
    """alert type + the configured key fields, or (no key, or none of its fields present) the normalised data."""
    if key and isinstance(data, dict):
        values = {path: field_value(data, path) for path in key}
        present = {path: v for path, v in values.items() if v is not _MISSING}
        if present:
            return _digest([alert_type, "key", present])
    return _digest([alert_type, "data", normalised(data)])


def derive_group_key(*, data: Any, labels: list[str]) -> str:
    """`label=value,…` of the configured labels when the alert carries all of them, else "" (no group)."""
    if not labels or not isinstance(data, dict):
        return ""
    values = [field_value(data, path) for path in labels]
    if any(v is _MISSING or v is None or v == "" for v in values):
        return ""
    text = ",".join(f"{path}={value}" for path, value in zip(labels, values, strict=True))
    return text if len(text) <= 200 else "sha256:" + _digest(text)
