"""Reads of investigation memory: the active memories an alert may recall, their keyword ranking, the API list.

Scope (state, alert type, chain, labels) is filtered in SQL on an index. Keyword ranking has one path per
backend: PostgreSQL full-text (`english` configuration, so `crashing` finds `crash`) on the stored `search`
vector and its GIN index (migration memory_changes_quota_indexes), ranked by SearchRank and cut to the best
KEYWORD_POOL; elsewhere (embedded SQLite) word overlap computed in Python over the scoped rows, enough at the
thousands of memories a team accumulates. Only the rows a step needs leave the database: recall never loads
every memory of an alert type.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from typing import Any

from django.db import connection
from django.db.models import F, Q, QuerySet

from agents.mcp.masking.boundary import mask_text
from agents.memory.ranking import overlap_score, tokens
from agents.memory.scope import LABEL_KEYS
from tarsy.models import Memory, MemoryState, Rating

MIN_SHARED_WORDS = 2  # a single shared word ("pod") is no evidence that a memory is about this alert
MAX_SEARCH_TERMS = 64
# Keyword matches ranked by PostgreSQL: far more than recall injects (5) or a tool returns (20), so fusion with
# the semantic ranking still has a real choice, and few enough that checking their words stays a few ms.
KEYWORD_POOL = 60
# A word in more than 1 in 20 memories tells them apart little better than "pod" does: past PRUNE_ABOVE
# memories, recall's full-text query leaves such words out (PostgreSQL's column statistics say which), so the
# index, not a scan of most rows, finds the matches.
COMMON_FRACTION = 0.05
PRUNE_ABOVE = 2000
_LEXEME = re.compile(r"'((?:[^']|'')+)'")
# Memories whose stored embeddings a recall compares in Python (no vector index without pgvector): the best
# SEMANTIC_FROM_KEYWORD keyword matches and the SEMANTIC_RECENT most recently confirmed others. Decoding one
# stored vector costs 0.1–0.4 ms: 80 of them stay within a prompt's budget; all of 20,000 took seconds.
SEMANTIC_FROM_KEYWORD = 50
SEMANTIC_RECENT = 30
SEMANTIC_ALL = 250  # up to this many in scope, all are compared (what a team's first years of memories hold)
# The recent ones are looked for among this many most recently confirmed active memories (an index walk): a
# scope's label filter cannot use an index, and sorting every memory of the alert type to find 30 was a scan.
RECENT_WINDOW = 1000
DUPLICATE_POOL = 50  # best keyword matches a new memory is compared with for near-duplicates


def memories_in_scope(*, alert_type: str | None, chain_id: str | None, labels: dict[str, str]) -> QuerySet:
    """Active memories for this alert type (or any) and chain (or any) whose labels do not contradict the
    alert's (masked as stored labels are); None: every alert type, or every chain (an agent's own search
    through the `tarsy` MCP server). A query: nothing is loaded until the caller asks for its rows."""
    rows = unscoped_gate(Memory.objects.filter(state=MemoryState.ACTIVE), alert_type=alert_type)
    if alert_type is not None:
        rows = rows.filter(alert_type__in=[alert_type, ""])
    if chain_id is not None:
        rows = rows.filter(chain_id__in=[chain_id, ""])
    for key in LABEL_KEYS:
        value = labels.get(key)
        if value is not None:  # the memory says nothing of this label, or says the alert's value
            rows = rows.filter(~Q(labels__has_key=key) | Q(**{f"labels__{key}": mask_text(str(value))}))
    return rows


def unscoped_gate(rows: QuerySet, *, alert_type: str | None) -> QuerySet:
    """A learned memory without scope labels applies everywhere its text matches, so it is recalled only within
    its own alert type and only once an engineer reviewed its source session as accurate (#43); a search across
    alert types (None) never gets one. Memories written by a person (no source session) are theirs to scope."""
    scoped = ~Q(labels={}) | Q(session__isnull=True)
    if alert_type is None:
        return rows.filter(scoped)
    return rows.filter(scoped | Q(alert_type=alert_type, session__review__rating=Rating.ACCURATE))


def keyword_ranking(*, scope: QuerySet, query: str) -> list[int]:
    """Ids of the memories of `scope` matching the query by keyword (sharing at least MIN_SHARED_WORDS of its
    words), best first."""
    words = tokens(query)[:MAX_SEARCH_TERMS]
    if not words:
        return []
    if connection.vendor == "postgresql":
        matches = _full_text(scope=scope, words=words, match=distinctive_words(words), limit=KEYWORD_POOL)
        return [i for i, text in matches if len(set(tokens(text)) & set(words)) >= MIN_SHARED_WORDS]
    scored = [(overlap_score(words, text), memory_id) for memory_id, text in scope.values_list("id", "text")
              if len(set(tokens(text)) & set(words)) >= MIN_SHARED_WORDS]
    return [memory_id for score, memory_id in sorted(scored, key=lambda s: (-s[0], s[1])) if score > 0]


def full_text_query(*, scope: QuerySet, words: list[str], match: list[str] | None = None) -> QuerySet:
    """(id, text) of the memories of `scope` holding any of `match` (default: `words`), ranked by all of `words`,
    best first (PostgreSQL); the `@@` filter is what the GIN index serves."""
    from django.contrib.postgres.search import SearchQuery, SearchRank

    def any_of(terms: list[str]) -> SearchQuery:
        return functools.reduce(operator.or_, [SearchQuery(w, config="english") for w in terms])

    return (scope.filter(search=any_of(match or words))
            .annotate(rank=SearchRank(F("search"), any_of(words), normalization=1))
            .order_by("-rank", "id").values_list("id", "text"))


def _full_text(*, scope: QuerySet, words: list[str], limit: int, match: list[str] | None = None,
               ) -> list[tuple[int, str]]:
    return list(full_text_query(scope=scope, words=words, match=match)[:limit])


def distinctive_words(words: list[str]) -> list[str]:
    """`words` less those whose every lexeme is in more than COMMON_FRACTION of the memories, by the statistics
    ANALYZE (autovacuum) keeps of the `search` column; all of them while there are fewer than PRUNE_ABOVE
    memories, no statistics yet, or nothing distinctive left (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples FROM pg_stats s "
            "JOIN pg_class c ON c.oid = to_regclass(quote_ident(s.schemaname) || '.' || quote_ident(s.tablename)) "
            "WHERE s.schemaname = current_schema() AND s.tablename = %s AND s.attname = 'search'",
            [Memory._meta.db_table])
        stats = cursor.fetchone()
        if stats is None or stats[0] is None or stats[2] < PRUNE_ABOVE:
            return words
        common = {lexeme for lexeme, share in zip(stats[0], stats[1], strict=False) if share > COMMON_FRACTION}
        cursor.execute("SELECT w, plainto_tsquery('english', w)::text FROM unnest(%s::text[]) AS w", [words])
        lexemes = {word: set(_LEXEME.findall(query)) for word, query in cursor.fetchall()}
    kept = [w for w in words if lexemes.get(w) and not lexemes[w] <= common]
    return kept or words


def _at_most(rows: QuerySet, count: int) -> bool:
    return not rows.values_list("id", flat=True)[count:count + 1]


def semantic_candidates(*, scope: QuerySet, first: list[int], model: str) -> list[tuple[int, list[float]]]:
    """(id, embedding) of the memories of `scope` embedded by `model` that a recall compares: all of them on
    SQLite or when there are at most SEMANTIC_ALL; past that on PostgreSQL the first SEMANTIC_FROM_KEYWORD of
    `first` (the keyword matches, best first) and the SEMANTIC_RECENT most recently confirmed others (of the
    RECENT_WINDOW most recently confirmed active memories)."""
    embedded = scope.filter(embedding_model=model, embedding__isnull=False)
    if connection.vendor != "postgresql" or _at_most(embedded, SEMANTIC_ALL):
        return list(embedded.values_list("id", "embedding"))
    first = first[:SEMANTIC_FROM_KEYWORD]
    rows = list(embedded.filter(id__in=first).values_list("id", "embedding"))
    window = list(Memory.objects.filter(state=MemoryState.ACTIVE).order_by("-confirmed_at", "-id")
                  .values_list("id", flat=True)[:RECENT_WINDOW])
    return rows + list(embedded.filter(id__in=window).exclude(id__in=first).order_by("-confirmed_at", "-id")
                       .values_list("id", "embedding")[:SEMANTIC_RECENT])


def duplicate_pool(*, alert_type: str, text: str) -> list[Memory]:
    """The memories (active or retired) of this alert type or any that a new memory with `text` could repeat
    by its words: on PostgreSQL the best DUPLICATE_POOL of those holding two of its words that follow each other
    in it, elsewhere all of them. A near-duplicate shares over half of the words, and any set of more than half
    of a sequence holds two neighbours: the pairs find every one, and few of the memories that share only
    common words."""
    rows = Memory.objects.filter(alert_type__in=[alert_type, ""])
    if connection.vendor != "postgresql":
        return list(rows)
    words = tokens(text)[:MAX_SEARCH_TERMS]
    if not words:
        return []
    from django.contrib.postgres.search import SearchQuery, SearchRank

    pairs = [SearchQuery(a, config="english") & SearchQuery(b, config="english")
             for a, b in itertools.pairwise(words)]
    query = functools.reduce(operator.or_, pairs or [SearchQuery(words[0], config="english")])
    ids = (rows.filter(search=query).annotate(rank=SearchRank(F("search"), query, normalization=1))
           .order_by("-rank", "id").values_list("id", flat=True)[:DUPLICATE_POOL])
    return list(rows.filter(id__in=list(ids)))


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
