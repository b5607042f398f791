"""The scorer's conversation: the rubric as the system prompt, the alert, the evidence and the analysis as data."""

from __future__ import annotations

import json
from typing import Any

from agents.llm.types import ConversationMessage
from agents.prompts.builder import data_block, evidence_text, text_cut

from .rubric import BANDS, FAILURE_TAGS

MAX_ALERT_CHARS = 8_000
MAX_RESULT_CHARS = 3_000  # per tool result: enough to judge, bounded for many calls
MAX_EVIDENCE_CHARS = 60_000
MAX_ANALYSIS_CHARS = 30_000


def system_prompt() -> str:
    bands = "\n".join(f"- `{level}`: score {low}–{high}" for level, (low, high) in BANDS.items())
    tags = "\n".join(f"- `{name}`: {meaning}" for name, meaning in FAILURE_TAGS.items())
    return (
        "You review the final analysis of an automated SRE investigation of a production alert. Judge whether "
        "its conclusion follows from the evidence the investigation gathered (tool results), not whether it "
        "sounds plausible.\n\n"
        "Decide first how far the evidence supports the conclusion, then score inside that level's band:\n"
        f"{bands}\n\n"
        "Name every problem you find with these tags only (none when there is none):\n"
        f"{tags}\n\n"
        "Answer with one JSON object and nothing else:\n"
        '{"support": "supported|partly|unsupported", "score": <0-100>, '
        '"rationale": "<two or three sentences for the on-call engineer>", "tags": ["<tag>", …]}'
    )


def scoring_messages(*, alert_type: str, alert_data: str, final_analysis: str, results: list[dict[str, Any]],
                     signals: dict[str, Any]) -> list[ConversationMessage]:
    sections = [
        f"Alert type: {alert_type or 'unspecified'}",
        data_block("Alert", text_cut(alert_data, MAX_ALERT_CHARS), what="the alert as submitted (masked)"),
        data_block("Evidence", evidence_text(results, per_result=MAX_RESULT_CHARS, total=MAX_EVIDENCE_CHARS),
                   what="the tool results the investigation saw, each with its evidence id"),
        data_block("Checks already made", json.dumps(signals, indent=2, sort_keys=True),
                   what="deterministic checks of the run (citations, tool calls, budget)"),
        data_block("Final analysis", text_cut(final_analysis, MAX_ANALYSIS_CHARS), what="the analysis to score"),
        "Score the final analysis now, as the JSON object described.",
    ]
    return [ConversationMessage(role="system", content=system_prompt()),
            ConversationMessage(role="user", content="\n\n".join(sections))]
