"""Reflection: one recorded LLM call extracts memories from a finished session (analysis, evidence, review).

Enqueued as `ReflectSession` after a score is stored, after a review is saved, or on completion when scoring is
off. The reflector failing or answering something unusable means no memories and a logged warning: it never
touches the session, and never retries blindly.

What it may learn passes the gates of agents.memory.provenance: a candidate citing no evidence id, or one the
session's tool results do not hold, is dropped; one from a session flagged `suspected_injection` (the reflector is
told of the flags) or whose text reads like instructions is stored pending, for an engineer to approve. The
outcome is the session's `memory.reflected` timeline event.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agents.llm.embeddings import embed_texts
from agents.llm.recorded import LLMTarget, recorded_call
from agents.llm.retry import ProviderError
from agents.llm.types import LLMRequest
from agents.mcp.masking.boundary import mask_text
from agents.memory.prompt import cite_memory
from agents.memory.provenance import Flags, evidence_problem, hold_reason
from agents.memory.reflection import Candidate, parse_memories, reflection_messages
from agents.memory.scope import alert_scope, clean_labels
from agents.prompts.injection import injection_signals
from agents.timeline_events import TimelineEventType, event_metadata
from tarsy.config import get_config
from tarsy.db_connections import connection_give_back
from tarsy.models import AlertSession, Memory, MemoryState, Rating, SessionReview, SessionStatus, TimelineEvent
from tarsy.services import interactions, memories, quality, sessions, timeline

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
    results = quality.session_evidence(session_id=session.id).results
    known = {r["evidence_id"] for r in results if r["evidence_id"]}
    if not known:  # nothing a memory could cite: the alert's text alone teaches nothing
        _record(session.id, trigger, skipped="the session has no tool results: a memory must rest on evidence the "
                                             "investigation saw, never on the alert's text alone")
        return
    flags = session_flags(session)
    review = SessionReview.objects.filter(session_id=session.id).values("rating", "feedback", "action_taken").first()
    released = memories.memory_release_unscoped(session_id=session.id) if (
        review and review["rating"] == Rating.ACCURATE) else []
    config = get_config().memory
    messages = reflection_messages(
        alert_type=session.alert_type, alert_data=session.alert_data, final_analysis=session.final_analysis,
        results=results, review=review, max_memories=config.max_per_reflection, flags=flags)
    reply = ask_reflector(session, messages, number)
    candidates, problem = parse_memories(reply, config.max_per_reflection) if reply is not None else (
        [], "the reflector call failed")
    if problem:
        log.warning("reflection on session %s learned nothing: %s", session.id, problem)
        if released:
            _record(session.id, trigger, released=released, skipped=problem)
        return
    outcome, dropped = _learn(session, candidates, known, flags)
    _record(session.id, trigger, outcome=outcome, dropped=dropped, flags=flags, released=released)
    log.info("reflection %d on session %s (%s): %d memories stored, %d dropped", number, session.id, trigger,
             len(outcome.stored), len(dropped))


def _learn(session: AlertSession, candidates: list[Candidate], known: set[str],
           flags: Flags) -> tuple[memories.LearnOutcome, list[tuple[Candidate, str]]]:
    """The candidates through the gates: masked, dropped when their citations fail, held when flagged, unscoped
    or instruction-shaped; the rest stored or confirming what is stored."""
    candidates = [replace(c, text=mask_text(c.text)) for c in candidates]  # masked before anything sees them
    checked = [(c, evidence_problem(c.evidence_ids, known)) for c in candidates]
    dropped = [(c, reason) for c, reason in checked if reason]
    kept = [c for c, reason in checked if not reason]
    vectors, model = embed_candidates(kept, session_id=str(session.id))
    scope = alert_scope(session.alert_data)
    learned = [memories.Learned(candidate=c, embedding=v,
                                held=hold_reason(c.text, flags, scoped=bool(clean_labels(c.labels) or scope)))
               for c, v in zip(kept, vectors, strict=True)]
    outcome = memories.memory_learn(session_id=session.id, learned=learned, alert_type=session.alert_type,
                                    chain_id=session.chain_id, alert_labels=scope, embedding_model=model)
    return outcome, [*dropped, *outcome.dropped]


def session_flags(session: AlertSession) -> Flags:
    """What of the session was flagged `suspected_injection` (the alert at dispatch, tool results as they came
    back, any other event so marked); the alert is checked again here, so a session flagged before the event
    existed still counts."""
    alert = injection_signals(session.alert_data or "")
    evidence: set[str] = set()
    other: set[str] = set()
    for event in TimelineEvent.objects.filter(session_id=session.id, metadata__suspected_injection=True).only(
            "event_type", "metadata"):
        metadata = event.metadata or {}
        if metadata.get("evidence_id"):
            evidence.add(str(metadata["evidence_id"]))
        elif metadata.get("source") == "alert":
            alert = alert or ["flagged at dispatch"]
        else:
            other.add(event.event_type)
    return Flags(alert=alert, evidence=sorted(evidence, key=lambda i: (len(i), i)), other=sorted(other))


def _record(session_id: Any, trigger: str, *, outcome: memories.LearnOutcome | None = None,
            dropped: Sequence[tuple[Candidate, str]] = (), flags: Flags | None = None, skipped: str = "",
            released: Sequence[Memory] = ()) -> None:
    """The reflection's outcome on the session's timeline (`memory.reflected`): what was learned, held, confirmed,
    found again without counting, dropped, and released by the session's accurate review, each with why."""
    outcome = outcome or memories.LearnOutcome()
    held = [m for m in outcome.stored if m.state == MemoryState.PENDING]
    active = [m for m in outcome.stored if m.state == MemoryState.ACTIVE]
    lines = [f"Reflection after {trigger}: " + (f"skipped, {skipped}." if skipped else
             f"{len(active)} learned, {len(held)} held for review, {len(outcome.confirmed)} confirmed, "
             f"{len(dropped)} dropped.")]
    lines += [f"{cite_memory(m.id)} held for review: {m.review_reason}" for m in held]
    lines += [f"{cite_memory(m.id)} released: the session was reviewed accurate" for m in released]
    lines += [f"{cite_memory(m.id)} found again, not counted as a confirmation: {why}"
              for m, why in outcome.not_counted]
    lines += [f"Dropped \"{c.text[:200]}\": {why}" for c, why in dropped]
    timeline.timeline_event_create(
        session_id=session_id, event_type=TimelineEventType.MEMORY_REFLECTED, content="\n".join(lines),
        metadata=event_metadata(
            TimelineEventType.MEMORY_REFLECTED, learned_ids=[m.id for m in active], held_ids=[m.id for m in held],
            confirmed_ids=[m.id for m in outcome.confirmed], released_ids=[m.id for m in released],
            skipped=skipped or None,
            dropped=[{"text": c.text[:200], "reason": why} for c, why in dropped],
            not_counted=[{"text": m.text[:200], "reason": why} for m, why in outcome.not_counted],
            suspected_injection=True if flags else None))


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


def embed_candidates(candidates: list[Candidate], *, session_id: str) -> tuple[list[list[float] | None], str]:
    """Embeddings of the candidates' texts with memory.embedding_provider (none without one, or when it fails:
    the memories are then found by keyword)."""
    config = get_config()
    name = config.memory.embedding_provider
    if not name or not candidates:
        return [None] * len(candidates), ""
    provider = config.provider(name)
    connection_give_back()
    try:
        vectors: list[list[float] | None] = list(embed_texts(name, provider, [c.text for c in candidates],
                                                                      session_id=session_id))
    except ProviderError as exc:
        log.warning("memories stored without embeddings: %s", exc.message)
        return [None] * len(candidates), ""
    return vectors, provider.model
