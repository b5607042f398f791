"""The verdict contract of a proactive check: its prompt asks for one verdict line, TARSy reads it back.

A run is healthy only when its analysis holds at least one verdict line and every one of them says HEALTHY;
no line, an unreadable one, or any PROBLEM counts as a problem, so a confused answer never hides a failure.
"""

from __future__ import annotations

import json
import re

VERDICT_HEALTHY = "VERDICT: HEALTHY"
VERDICT_PROBLEM = "VERDICT: PROBLEM"
HEALTHY, PROBLEM = "healthy", "problem"
# A line that is only a verdict, with the markdown decoration models add (`**VERDICT: HEALTHY**`, "- ", "> ").
_VERDICT_LINE = re.compile(r"^[\s>*_`#-]*verdict\s*:\s*[*_`]*\s*([a-z]+)\s*[*_`.]*\s*$", re.IGNORECASE | re.MULTILINE)


def check_verdict(analysis: str) -> str:
    """`healthy` or `problem` (see the module docstring)."""
    words = [w.upper() for w in _VERDICT_LINE.findall(analysis or "")]
    return HEALTHY if words and all(w == "HEALTHY" for w in words) else PROBLEM


def check_instruction(alert_data: str) -> tuple[str, str]:
    """(check name, instruction) of a check's alert data (`{"check": …, "instruction": …}`); the raw text as the
    instruction when it is not that shape."""
    try:
        data = json.loads(alert_data)
    except (TypeError, ValueError):
        return "", alert_data
    if isinstance(data, dict) and isinstance(data.get("instruction"), str):
        return str(data.get("check") or ""), data["instruction"]
    return "", alert_data
