"""Reflection: one recorded LLM call extracts memories from a finished session (analysis, evidence, review).

Enqueued as `ReflectSession` after a score is stored, after a review is saved, or on completion when scoring is
off. The reflector failing or answering something unusable means no memories and a logged warning: it never
touches the session, and never retries blindly.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

from agents.llm.embeddings import embed_texts
from agents.llm.recorded import LLMTarget, recorded_call
from agents.llm.retry import ProviderError
from agents.llm.types import LLMRequest
from agents.mcp.masking.boundary import mask_text
from agents.memory.reflection import Candidate, parse_memories, reflection_messages
from agents.memory.scope import alert_labels
from tarsy.config import get_config
from tarsy.db_connections import connection_give_back
from tarsy.models import AlertSession, SessionReview, SessionStatus
from tarsy.services import interactions, memories, quality, sessions

log = logging.getLogger(__name__)
REFLECTION_MAX_OUTPUT_TOKENS = 2048


def session_reflect(*, session_id: Any, trigger: str) -> None:
    session = sessions.session_find(session_id=session_id)
    if session is None or session.status != SessionStatus.COMPLETED or not memories.reflection_wanted(
            session=session):
        return
    number = memories.reflection_due(session_id=session.id, trigger=trigger)
    if number is None:
        return
    review = SessionReview.objects.filter(session_id=session.id).values("rating", "feedback", "action_taken").first()
    config = get_config().memory
    messages = reflection_messages(
        alert_type=session.alert_type, alert_data=session.alert_data, final_analysis=session.final_analysis,
        results=quality.session_evidence(session_id=session.id).results, review=review,
        max_memories=config.max_per_reflection)
    reply = ask_reflector(session, messages, number)
    if reply is None:
        return
    candidates, problem = parse_memories(reply, config.max_per_reflection)
    if problem:
        log.warning("reflection on session %s learned nothing: %s", session.id, problem)
        return
    candidates = [replace(c, text=mask_text(c.text)) for c in candidates]  # masked before anything sees them
    vectors, model = embed_candidates(candidates)
    learned = [memories.Learned(candidate=c, embedding=v) for c, v in zip(candidates, vectors, strict=True)]
    stored = memories.memory_learn(session_id=session.id, learned=learned, alert_type=session.alert_type,
                                   chain_id=session.chain_id, alert_labels=alert_labels(session.alert_data),
                                   embedding_model=model)
    log.info("reflection %d on session %s (%s): %d memories", number, session.id, trigger, len(stored))


def ask_reflector(session: AlertSession, messages, number: int) -> str | None:
    """One recorded call to memory.llm_provider (the default provider when unset), kept out of the session's
    totals like scoring; its reply text, or None (logged) when the call failed."""
    config = get_config()
    name = config.memory.llm_provider or config.default_provider
    target = LLMTarget.of(name, config.provider(name))
    request = LLMRequest(messages=messages, provider=target.config, provider_name=target.name,
                         session_id=str(session.id), interaction_type="memory_reflection", iteration=number,
                         max_output_tokens=REFLECTION_MAX_OUTPUT_TOKENS, deadline=time.time() + config.memory.timeout)
    connection_give_back()  # the reflection call is a wait
    call = recorded_call(request, target, record=lambda record: interactions.llm_interaction_record(
        session_id=session.id, execution_id=None, iteration=0, record=record, add_to_totals=False))
    if call.error:
        log.warning("reflection on session %s failed: %s", session.id, call.error.message)
        return None
    return call.response.text


def embed_candidates(candidates: list[Candidate]) -> tuple[list[list[float] | None], str]:
    """Embeddings of the candidates' texts with memory.embedding_provider (none without one, or when it fails:
    the memories are then found by keyword)."""
    config = get_config()
    name = config.memory.embedding_provider
    if not name or not candidates:
        return [None] * len(candidates), ""
    provider = config.provider(name)
    connection_give_back()
    try:
        vectors: list[list[float] | None] = list(embed_texts(name, provider, [c.text for c in candidates]))
    except ProviderError as exc:
        log.warning("memories stored without embeddings: %s", exc.message)
        return [None] * len(candidates), ""
    return vectors, provider.model
