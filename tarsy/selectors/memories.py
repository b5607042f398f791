"""Reads of investigation memory: the active memories an alert may recall, their keyword ranking, the API list.

Keyword ranking has one path per backend: PostgreSQL full-text (`english` configuration, so `crashing` finds
`crash`), ranked by SearchRank; elsewhere (embedded SQLite) word overlap computed in Python over the scoped
rows, which is enough at the thousands of memories a team accumulates.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet

from agents.memory.ranking import overlap_score, tokens
from agents.memory.scope import in_scope
from tarsy.models import Memory, MemoryState, Rating

MIN_SHARED_WORDS = 2  # a single shared word ("pod") is no evidence that a memory is about this alert
MAX_SEARCH_TERMS = 64


def memories_in_scope(*, alert_type: str | None, chain_id: str | None, labels: dict[str, str]) -> list[Memory]:
    """Active memories for this alert type (or any) and chain (or any) whose labels do not contradict the
    alert's; None: every alert type, or every chain (an agent's own search through the `tarsy` MCP server)."""
    rows = unscoped_gate(Memory.objects.filter(state=MemoryState.ACTIVE), alert_type=alert_type)
    if alert_type is not None:
        rows = rows.filter(alert_type__in=[alert_type, ""])
    if chain_id is not None:
        rows = rows.filter(chain_id__in=[chain_id, ""])
    return [m for m in rows if in_scope(m.labels, labels)]


def unscoped_gate(rows: QuerySet, *, alert_type: str | None) -> QuerySet:
    """A learned memory without scope labels applies everywhere its text matches, so it is recalled only within
    its own alert type and only once an engineer reviewed its source session as accurate (#43); a search across
    alert types (None) never gets one. Memories written by a person (no source session) are theirs to scope."""
    scoped = ~Q(labels={}) | Q(session__isnull=True)
    if alert_type is None:
        return rows.filter(scoped)
    return rows.filter(scoped | Q(alert_type=alert_type, session__review__rating=Rating.ACCURATE))


def keyword_ranking(*, candidates: list[Memory], query: str) -> list[int]:
    """Ids of the candidates matching the query by keyword, best first."""
    words = tokens(query)[:MAX_SEARCH_TERMS]
    if not words or not candidates:
        return []
    shared = {m.id for m in candidates if len(set(tokens(m.text)) & set(words)) >= MIN_SHARED_WORDS}
    if connection.vendor == "postgresql":
        return [i for i in _full_text(ids=[m.id for m in candidates], words=words) if i in shared]
    scored = [(overlap_score(words, m.text), m.id) for m in candidates if m.id in shared]
    return [memory_id for score, memory_id in sorted(scored, key=lambda s: (-s[0], s[1])) if score > 0]


def _full_text(*, ids: list[int], words: list[str]) -> list[int]:
    from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector

    query = functools.reduce(operator.or_, [SearchQuery(w, config="english") for w in words])
    vector = SearchVector("text", config="english")
    rows = (Memory.objects.filter(id__in=ids).annotate(rank=SearchRank(vector, query, normalization=1))
            .filter(rank__gt=0).order_by("-rank", "id").values_list("id", flat=True))
    return list(rows)


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
