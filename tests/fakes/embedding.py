"""The deterministic embedding the fake LLM servers answer with: texts sharing words or word stems point the
same way, others do not — enough to test retrieval end to end without a model."""

from __future__ import annotations

import hashlib
import math
import re

EMBEDDING_DIMS = 256
_WORD = re.compile(r"[a-z0-9]+")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4 and not any(c.isdigit() for c in word):
            return word[: -len(suffix)]
    return word


def fake_embedding(text: str, dims: int = EMBEDDING_DIMS) -> list[float]:
    """A unit vector: each (lightly stemmed) word and each word's character trigrams add to hashed dimensions."""
    vector = [0.0] * dims
    for word in {_stem(w) for w in _WORD.findall(text.lower()) if len(w) > 1}:
        features = [(word, 1.0)] + [(f"#{word[i:i + 3]}", 0.3) for i in range(max(len(word) - 2, 0))]
        for feature, weight in features:
            digest = hashlib.sha256(feature.encode()).digest()
            index = int.from_bytes(digest[:4], "little") % dims
            vector[index] += weight if digest[4] & 1 else -weight
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]
