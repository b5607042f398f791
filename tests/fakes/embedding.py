"""The deterministic embedding the fake LLM servers answer with: texts sharing words, word stems or concepts
point the same way, others do not — enough to test retrieval end to end without a model.

`CONCEPTS` stands in for what a real embedding model knows and keyword search does not: that "out of memory"
and "OOMKilled", or "x509" and "certificate", mean the same thing. It is small and fixed, so figures measured
with it (tests.bench.memory_recall) measure TARSy's retrieval pipeline, not a model."""

from __future__ import annotations

import hashlib
import math
import re

EMBEDDING_DIMS = 256
_WORD = re.compile(r"[a-z0-9]+")
CONCEPT_WEIGHT = 1.5
CONCEPTS = {
    "memory": "memory oom oomkill oomkilled mi gi heap",
    "kill": "kill killed oomkilled evict evicted terminate terminat",
    "config": "config configmap configuration setting settings",
    "restart": "restart restarting restarted crash crashloop crashloopbackoff loop backoff",
    "database": "database db postgres postgresql pgbouncer sql",
    "connection": "connection connections client clients pool max_connection",
    "certificate": "certificate cert tls x509 ssl handshake",
    "expiry": "expire expir expiry valid renew renewal",
    "dns": "dns coredns lookup resolve resolv resolution resolver nxdomain",
    "disk": "disk space device volume full fill fills inode",
    "image": "image imagepullbackoff registry pull",
    "credential": "credential credentials unauthorized secret token",
    "cpu": "cpu processor throttle throttl quota",
    "latency": "latency slow slowness response respons",
    "scale": "hpa autoscaler autoscal replica instance instanc maxreplica",
    "probe": "probe liveness readiness health check healthcheck",
}
_CONCEPT_OF = {word: concept for concept, words in CONCEPTS.items() for word in words.split()}


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
        if word in _CONCEPT_OF:
            features.append((f"@{_CONCEPT_OF[word]}", CONCEPT_WEIGHT))
        for feature, weight in features:
            digest = hashlib.sha256(feature.encode()).digest()
            index = int.from_bytes(digest[:4], "little") % dims
            vector[index] += weight if digest[4] & 1 else -weight
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]
