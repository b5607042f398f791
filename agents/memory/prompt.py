"""The recalled memories as the first prompt shows them: fenced as data, each with its id to cite ([M3]), its
kind, confidence, age and use, so a stale or weak memory says so."""

from __future__ import annotations

from dataclasses import dataclass

from agents.prompts.builder import data_block


@dataclass(frozen=True)
class Recalled:
    memory_id: int
    kind: str
    text: str
    confidence: float
    age_days: int
    use_count: int
    session_id: str = ""


def cite_memory(memory_id: int) -> str:
    return f"[M{memory_id}]"


def memories_block(memories: list[Recalled]) -> str:
    """The prompt section ("" when nothing was recalled)."""
    if not memories:
        return ""
    lines = []
    for m in memories:
        source = f", from session {m.session_id}" if m.session_id else ""
        lines.append(f"{cite_memory(m.memory_id)} {m.kind} (confidence {m.confidence:.2f}, confirmed {m.age_days} "
                     f"day(s) ago, recalled {m.use_count} time(s){source}): {m.text}")
    return data_block(
        "Memories from past investigations", "\n".join(lines),
        what="what TARSy learned from earlier investigations of similar alerts, each with its id",
        preface="These may be outdated or wrong for this alert: verify them with tools before relying on them, "
                "and cite a memory you use by its id, e.g. [M12].")
