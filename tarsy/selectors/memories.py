"""Reads of investigation memory: the active memories an alert may recall, their keyword ranking, the API list.

Scope (state, alert type, chain, labels) is filtered in SQL on an index. Keyword ranking has one path per
backend: PostgreSQL full-text (`english` configuration, so `crashing` finds `crash`) on the GIN index made by
the migration memory_changes_quota_indexes, ranked by SearchRank and cut to the best KEYWORD_POOL; elsewhere
(embedded SQLite) word overlap computed in Python over the scoped rows, enough at the thousands of memories a
team accumulates.
Only the rows a step needs leave the database: recall never loads every memory of an alert type.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet

from agents.mcp.masking.boundary import mask_text
from agents.memory.ranking import overlap_score, tokens
from agents.memory.scope import LABEL_KEYS
from tarsy.models import Memory, MemoryState

MIN_SHARED_WORDS = 2  # a single shared word ("pod") is no evidence that a memory is about this alert
MAX_SEARCH_TERMS = 64
# Keyword matches ranked by PostgreSQL: far more than recall injects (5) or a tool returns (20), so fusion with
# the semantic ranking still has a real choice, and few enough that ranking them stays a few milliseconds.
KEYWORD_POOL = 200
# Memories whose stored embeddings a recall compares in Python (no vector index without pgvector): the keyword
# matches first, then the most recently confirmed. 1,000 × 768 floats is tens of ms; all of 20,000 was seconds.
SEMANTIC_SCAN = 1000
DUPLICATE_POOL = 50  # best keyword matches a new memory is compared with for near-duplicates


def memories_in_scope(*, alert_type: str | None, chain_id: str | None, labels: dict[str, str]) -> QuerySet:
    """Active memories for this alert type (or any) and chain (or any) whose labels do not contradict the
    alert's (masked as stored labels are); None: every alert type, or every chain (an agent's own search
    through the `tarsy` MCP server). A query: nothing is loaded until the caller asks for its rows."""
    rows = Memory.objects.filter(state=MemoryState.ACTIVE)
    if alert_type is not None:
        rows = rows.filter(alert_type__in=[alert_type, ""])
    if chain_id is not None:
        rows = rows.filter(chain_id__in=[chain_id, ""])
    for key in LABEL_KEYS:
        value = labels.get(key)
        if value is not None:  # the memory says nothing of this label, or says the alert's value
            rows = rows.filter(~Q(labels__has_key=key) | Q(**{f"labels__{key}": mask_text(str(value))}))
    return rows


def keyword_ranking(*, scope: QuerySet, query: str) -> list[int]:
    """Ids of the memories of `scope` matching the query by keyword (sharing at least MIN_SHARED_WORDS of its
    words), best first."""
    words = tokens(query)[:MAX_SEARCH_TERMS]
    if not words:
        return []
    if connection.vendor == "postgresql":
        matches = _full_text(scope=scope, words=words, limit=KEYWORD_POOL)
        return [i for i, text in matches if len(set(tokens(text)) & set(words)) >= MIN_SHARED_WORDS]
    scored = [(overlap_score(words, text), memory_id) for memory_id, text in scope.values_list("id", "text")
              if len(set(tokens(text)) & set(words)) >= MIN_SHARED_WORDS]
    return [memory_id for score, memory_id in sorted(scored, key=lambda s: (-s[0], s[1])) if score > 0]


def full_text_query(*, scope: QuerySet, words: list[str]) -> QuerySet:
    """(id, text) of the memories of `scope` matching any of `words`, best first (PostgreSQL); the `@@` filter is
    what the GIN index serves."""
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    query = functools.reduce(operator.or_, [SearchQuery(w, config="english") for w in words])
    vector = SearchVector("text", config="english")
    return (scope.annotate(document=vector).filter(document=query)
            .annotate(rank=SearchRank(vector, query, normalization=1))
            .order_by("-rank", "id").values_list("id", "text"))


def _full_text(*, scope: QuerySet, words: list[str], limit: int) -> list[tuple[int, str]]:
    return list(full_text_query(scope=scope, words=words)[:limit])


def semantic_candidates(*, scope: QuerySet, first: list[int], model: str) -> list[tuple[int, list[float]]]:
    """(id, embedding) of at most SEMANTIC_SCAN memories of `scope` embedded by `model`: those of `first` (the
    keyword matches), then the most recently confirmed."""
    embedded = scope.filter(embedding_model=model, embedding__isnull=False)
    rows = list(embedded.filter(id__in=first[:SEMANTIC_SCAN]).values_list("id", "embedding"))
    room = SEMANTIC_SCAN - len(rows)
    if room > 0:
        rows += list(embedded.exclude(id__in=first[:SEMANTIC_SCAN]).order_by("-confirmed_at", "-id")
                     .values_list("id", "embedding")[:room])
    return rows


def duplicate_pool(*, alert_type: str, text: str) -> list[Memory]:
    """The memories (active or retired) of this alert type or any that a new memory with `text` could repeat:
    on PostgreSQL its best DUPLICATE_POOL keyword matches, elsewhere all of them."""
    rows = Memory.objects.filter(alert_type__in=[alert_type, ""])
    words = tokens(text)[:MAX_SEARCH_TERMS]
    if connection.vendor != "postgresql":
        return list(rows)
    if not words:
        return []
    ids = [memory_id for memory_id, _ in _full_text(scope=rows, words=words, limit=DUPLICATE_POOL)]
    return list(rows.filter(id__in=ids))


def memories_list(*, search: str = "", kind: str = "", state: str = "", alert_type: str = "",
                  session_id: Any = None) -> QuerySet:
    """The API's list: newest confirmed first, filtered; `search` matches words of the text."""
    rows = Memory.objects.all()
    if kind:
        rows = rows.filter(kind=kind)
    if state:
        rows = rows.filter(state=state)
    if alert_type:
        rows = rows.filter(alert_type=alert_type)
    if session_id:
        rows = rows.filter(session_id=session_id)
    words = [w for w in search.split() if w]
    if words:
        rows = rows.filter(functools.reduce(operator.and_, [Q(text__icontains=w) for w in words]))
    return rows
