"""Recalled memories as a model reads them, in the first prompt and in `recall_past_investigations`' answer: each
memory's text fenced and checked on its own (agents.prompts.fence) — a memory was written by a model from outside
text, so one that reads like instructions is flagged, not obeyed — under its id to cite ([M3]), kind, confidence,
age and use, so a stale or weak memory says so."""

from __future__ import annotations

from dataclasses import dataclass

from agents.prompts.fence import Fenced, untrusted


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


def memory_entry(m: Recalled, *, facts: str) -> Fenced:
    """One memory: `facts` (what is known about it) as the head line, its text fenced and checked."""
    return untrusted(m.text, what="its text, learned by a model from an earlier investigation",
                     preface=f"{cite_memory(m.memory_id)} {facts}.")


def memories_block(memories: list[Recalled]) -> tuple[str, list[int]]:
    """The prompt section ("" when nothing was recalled) and the ids of the memories whose text reads like
    instructions (for the timeline)."""
    if not memories:
        return "", []
    entries = [(m, memory_entry(m, facts=_facts(m))) for m in memories]
    body = "\n\n".join(entry.text for _, entry in entries)
    return (f"## Memories from past investigations\n\nWhat TARSy learned from earlier investigations of similar "
            f"alerts. These may be outdated or wrong for this alert: verify them with tools before relying on them, "
            f"and cite a memory you use by its id, e.g. [M12].\n\n{body}",
            [m.memory_id for m, entry in entries if entry.flagged])


def _facts(m: Recalled) -> str:
    source = f", from session {m.session_id}" if m.session_id else ""
    return (f"{m.kind} (confidence {m.confidence:.2f}, confirmed {m.age_days} day(s) ago, recalled {m.use_count} "
            f"time(s){source})")
