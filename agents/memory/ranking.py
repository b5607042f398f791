"""Ranking memories for recall: tokens, overlap, cosine, reciprocal-rank fusion and age decay. Plain Python, so
the same numbers come out whichever database holds the rows."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Reciprocal-rank fusion's constant: 60 is usual for long web result lists; recall picks 5 out of a few dozen
# matches, where 60 makes rank 1 and rank 5 nearly equal and lets confidence and age decide instead of relevance.
RRF_K = 10
MAX_QUERY_TOKENS = 64  # a 1 MB alert is not a query: its first distinct words are
_TOKEN = re.compile(r"[a-z0-9][a-z0-9_-]*[a-z0-9]|[a-z0-9]")
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "for", "from", "has", "have", "if", "in",
    "into", "is", "it", "its", "no", "not", "of", "on", "or", "so", "than", "that", "the", "their", "then", "there",
    "these", "this", "to", "was", "were", "will", "with", "which", "who", "why", "when", "what", "where", "how",
    "after", "before", "during", "over", "under", "about", "all", "any", "can", "could", "did", "does", "do",
    "done", "via", "per", "out", "up", "down", "off", "our", "we", "you", "they", "them", "he", "she"
})
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


def _stem(word: str) -> str:
    """A light suffix cut so `crashing`, `crashed` and `crashes` meet; names with digits stay whole."""
    if any(ch.isdigit() for ch in word) or "-" in word:
        return word
    for suffix in _SUFFIXES:
        if not word.endswith(suffix) or len(word) - len(suffix) < 3:
            continue
        if suffix == "es" and not word[:-2].endswith(("s", "x", "z", "ch", "sh")):
            continue  # `services` is `service` + s, `crashes` is `crash` + es
        if suffix == "s" and word.endswith(("ss", "us", "is")):  # `status`, `class`, `analysis` stay whole
            return word
        return word[: -len(suffix)]
    return word


def tokens(text: str) -> list[str]:
    """Distinct lower-cased, lightly stemmed words in order of appearance (hyphenated ones also by their parts),
    stopwords left out."""
    seen: dict[str, None] = {}
    for raw in _TOKEN.findall(text.lower()):
        parts = [raw, *raw.replace("_", "-").split("-")] if ("-" in raw or "_" in raw) else [raw]
        for word in parts:  # `crash-loops` is also `crash` and `loop`; `checkout-config` stays findable whole
            if word not in STOPWORDS and len(word) >= 2:
                seen.setdefault(_stem(word), None)
    return list(seen)


def query_tokens(text: str) -> list[str]:
    return tokens(text)[:MAX_QUERY_TOKENS]


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    left, right = set(a), set(b)
    return len(left & right) / len(left | right) if left and right else 0.0


def overlap_score(query: Sequence[str], text: str) -> float:
    """How much of a memory's text the query covers, damped for long texts (the keyword rank where the database
    has no full-text search)."""
    words = set(tokens(text))
    hits = len(words & set(query))
    return hits / math.sqrt(len(words)) if hits else 0.0


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; C-level loops (map, hypot): recall compares hundreds of vectors per prompt."""
    if len(a) != len(b) or not a:
        return 0.0
    norm = math.hypot(*a) * math.hypot(*b)
    return sum(map(operator.mul, a, b)) / norm if norm else 0.0


def decay(age_days: float, half_life_days: float) -> float:
    """Weight of a memory last confirmed `age_days` ago: halves every half-life."""
    return 0.5 ** (max(age_days, 0.0) / half_life_days)


def weight(confidence: float, age_days: float, half_life_days: float) -> float:
    """What multiplies a memory's fused relevance: its age decay in full (a stale memory sinks), its confidence
    by half (a doubtful memory that matches well still beats a confident one that matches badly)."""
    return (0.5 + 0.5 * confidence) * decay(age_days, half_life_days)


@dataclass(frozen=True)
class Ranked:
    memory_id: int
    score: float
    keyword_rank: int | None = None  # 1-based position in the keyword list
    similarity: float | None = None  # cosine to the query, when embeddings took part


def fuse(keyword: Sequence[int], semantic: Sequence[tuple[int, float]], *, weights: dict[int, float],
         limit: int) -> list[Ranked]:
    """Reciprocal-rank fusion of the keyword ranking (ids, best first) and the semantic one ((id, cosine), best
    first, already above the floor), each fused score multiplied by the memory's weight (confidence × decay)."""
    scores: dict[int, float] = {}
    for rank, memory_id in enumerate(keyword, start=1):
        scores[memory_id] = scores.get(memory_id, 0.0) + 1.0 / (RRF_K + rank)
    for rank, (memory_id, _) in enumerate(semantic, start=1):
        scores[memory_id] = scores.get(memory_id, 0.0) + 1.0 / (RRF_K + rank)
    keyword_rank = {memory_id: rank for rank, memory_id in enumerate(keyword, start=1)}
    similarity = dict(semantic)
    ranked = [Ranked(memory_id=m, score=round(s * weights.get(m, 1.0) * 1000, 4), keyword_rank=keyword_rank.get(m),
                     similarity=round(similarity[m], 4) if m in similarity else None) for m, s in scores.items()]
    ranked.sort(key=lambda r: (-r.score, r.memory_id))
    return ranked[:limit]
