"""Recall: the memories an investigation's (or chat's) first prompt carries.

Hybrid ranking: keyword (tarsy.selectors.memories) and, when memory.embedding_provider is set, cosine similarity
of stored embeddings to the query's (above memory.similarity_floor), fused by reciprocal rank and weighted by
confidence and age decay (memory.half_life_days); at most memory.max_injected. What was injected is said on the
timeline (`memory.recalled`, ids and scores) and counted on the memories, once per session.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from agents.llm.embeddings import embed_texts
from agents.llm.retry import ProviderError
from agents.memory.prompt import Recalled, cite_memory, memories_block
from agents.memory.ranking import Ranked, cosine, fuse, weight
from agents.memory.scope import alert_scope
from agents.timeline_events import TimelineEventType, event_metadata
from tarsy.config import get_config
from tarsy.db_connections import connection_give_back
from tarsy.models import AgentExecution, Memory, StageKind
from tarsy.selectors.memories import keyword_ranking, memories_in_scope, semantic_candidates
from tarsy.services import memories
from tarsy.services.pseudonyms import pseudonyms_adopt
from tarsy.services.recorder import DbRecorder

log = logging.getLogger(__name__)
MAX_QUERY_CHARS = 8_000  # what is embedded of an alert: its beginning says what it is about


@dataclass(frozen=True)
class Hit:
    memory: Memory
    ranked: Ranked


def recall(*, query: str, alert_type: str | None, chain_id: str | None, labels: dict[str, str],
           limit: int | None = None, session_id: str = "") -> tuple[list[Hit], str]:
    """The memories to inject, best first (at most `limit`, default memory.max_injected), and the mode ("hybrid"
    with embeddings, else "keyword"). None for alert type or chain: any."""
    config = get_config().memory
    scope = memories_in_scope(alert_type=alert_type, chain_id=chain_id, labels=labels)
    if not scope.exists():
        return [], "keyword"
    keyword = keyword_ranking(scope=scope, query=query)
    semantic, mode = _semantic(scope, keyword, query[:MAX_QUERY_CHARS], session_id)
    now = timezone.now()
    matched = Memory.objects.filter(id__in={*keyword, *(i for i, _ in semantic)})
    weights = {i: weight(confidence, (now - confirmed_at).total_seconds() / 86400, config.half_life_days)
               for i, confidence, confirmed_at in matched.values_list("id", "confidence", "confirmed_at")}
    ranked = fuse(keyword, semantic, weights=weights, limit=limit or config.max_injected)
    by_id = Memory.objects.defer("embedding").in_bulk([r.memory_id for r in ranked])
    return [Hit(memory=by_id[r.memory_id], ranked=r) for r in ranked], mode


def _semantic(scope: QuerySet, keyword: list[int], query: str, session_id: str) -> tuple[list[tuple[int, float]], str]:
    config = get_config()
    name = config.memory.embedding_provider
    if not name:
        return [], "keyword"
    provider = config.provider(name)
    connection_give_back()  # the embedding call is a wait
    try:
        [vector] = embed_texts(name, provider, [query], session_id=session_id)
    except ProviderError as exc:
        log.warning("memory recall by keyword only: %s", exc.message)
        return [], "keyword"
    scored = [(i, cosine(vector, embedding))
              for i, embedding in semantic_candidates(scope=scope, first=keyword, model=provider.model)]
    kept = [(i, s) for i, s in scored if s >= config.memory.similarity_floor]
    return sorted(kept, key=lambda p: (-p[1], p[0])), "hybrid"


def recall_enabled(execution: AgentExecution) -> bool:
    config = get_config()
    chain = config.chains.get(execution.session.chain_id)
    return (config.memory.enabled and execution.stage.kind in (StageKind.INVESTIGATION, StageKind.CHAT)
            and (chain is None or (chain.memory is not None and chain.memory.recall)))


def recalled_for_prompt(execution: AgentExecution, recorder: DbRecorder, question: str = "") -> str:
    """The first prompt's memory section ("" when memory is off or nothing matches); a `memory.recalled` event
    says what it holds."""
    if not recall_enabled(execution):
        return ""
    session = execution.session
    query = "\n".join(filter(None, [session.alert_type, session.title, session.alert_data, question]))
    hits, mode = recall(query=query, alert_type=session.alert_type, chain_id=session.chain_id,
                        labels=alert_scope(session.alert_data), session_id=str(session.id))
    if not hits:
        return ""
    pseudonyms_adopt(session_id=str(session.id), texts=[h.memory.text for h in hits],
                     from_sessions=[s for h in hits for s in h.memory.source_sessions])
    ids = [h.memory.id for h in hits]
    now = timezone.now()
    shown = [Recalled(memory_id=h.memory.id, kind=h.memory.kind, text=h.memory.text,
                      confidence=h.memory.confidence, age_days=(now - h.memory.confirmed_at).days,
                      use_count=h.memory.use_count, session_id=str(h.memory.session_id or ""))
             for h in hits]
    section, flagged = memories_block(shown)
    summary = "\n".join(f"{cite_memory(h.memory.id)} score {h.ranked.score}: {h.memory.text[:200]}" for h in hits)
    with transaction.atomic():  # the use and the event that says so commit together: one use per session
        memories.memory_mark_used(memory_ids=ids, session_id=session.id)
        recorder.add_event(TimelineEventType.MEMORY_RECALLED, f"Recalled {len(hits)} memories ({mode}):\n{summary}",
                           event_metadata(TimelineEventType.MEMORY_RECALLED, memory_ids=ids,
                                          scores=[h.ranked.score for h in hits], mode=mode,
                                          suspected_injection=bool(flagged) or None, flagged_memory_ids=flagged))
        recorder.flush()
    return section
