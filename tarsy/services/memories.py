"""Investigation memory: learning (with near-duplicate merge), review adjustments, use, edits and retirement.

Every text is masked here, where it enters (the reflector's reply comes from outside). Confidence moves in fixed
steps so a reader can tell why a memory stands where it does.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from agents.mcp.masking.boundary import mask_text
from agents.memory.prompt import cite_memory
from agents.memory.provenance import UNSCOPED
from agents.memory.ranking import cosine, jaccard, tokens
from agents.memory.reflection import KINDS, MAX_MEMORY_CHARS, Candidate
from agents.memory.scope import clean_labels
from agents.timeline_events import TOOL_RESULT_EVENTS, TimelineEventType
from tarsy.config import get_config
from tarsy.decisions import ReflectSession, enact_on_commit
from tarsy.errors import NotFound, ValidationFailed
from tarsy.models import AlertSession, Memory, MemoryChangeAction, MemoryState, Rating, TimelineEvent
from tarsy.selectors.memories import duplicate_pool

from .memory_changes import (
    ACTOR_REFLECTION,
    ACTOR_REVIEW,
    ACTOR_SYSTEM,
    memory_change_record,
    memory_snapshot,
)
from .memory_quota import memory_quota_enforce

LEARNED_CONFIDENCE = 0.5  # a reflection's first sighting: unconfirmed
CONFIRM_STEP = 0.1  # another session reached the same learning
ACCURATE_STEP = 0.15  # an engineer rated the source session accurate
PARTIAL_STEP = -0.1
INACCURATE_STEP = -0.3  # for memories merely confirmed by the session; those it produced are retired
RETIRE_BELOW = 0.2  # a memory this doubtful is no longer recalled
DUPLICATE_JACCARD = 0.6  # word overlap above which two texts say the same thing
DUPLICATE_COSINE = 0.92


def _clamp(value: float) -> float:
    return round(min(max(value, 0.0), 1.0), 4)


def reflection_wanted(*, session: AlertSession) -> bool:
    """Memory is on and the session's chain learns from its sessions."""
    config = get_config()
    chain = config.chains.get(session.chain_id)
    return config.memory.enabled and (chain is None or (chain.memory is not None and chain.memory.reflect))


def reflection_request(*, session: AlertSession, trigger: str) -> None:
    """Queue a reflection on the session once the current transaction commits (when memory wants one)."""
    if reflection_wanted(session=session):
        enact_on_commit([ReflectSession(str(session.id), trigger)])


@dataclass(frozen=True)
class Learned:
    """A candidate after masking, with its embedding when one was computed, and why it must wait for an
    engineer's review ("" when it may go live: agents.memory.provenance.hold_reason)."""

    candidate: Candidate
    embedding: list[float] | None = None
    held: str = ""


@dataclass
class LearnOutcome:
    """What `memory_learn` did: new memories (active or held), ones it confirmed, the memories it found again
    without counting it (`confirmation_refused`), and the candidates it dropped as near-duplicates, each with why."""

    stored: list[Memory] = field(default_factory=list)
    confirmed: list[Memory] = field(default_factory=list)
    not_counted: list[tuple[Memory, str]] = field(default_factory=list)
    dropped: list[tuple[Candidate, str]] = field(default_factory=list)


def _duplicate(text: str, embedding: list[float] | None, model: str, pool: list[Memory]) -> Memory | None:
    words = tokens(text)
    for memory in pool:
        if jaccard(words, tokens(memory.text)) >= DUPLICATE_JACCARD:
            return memory
        if (embedding and memory.embedding and memory.embedding_model == model
                and cosine(embedding, memory.embedding) >= DUPLICATE_COSINE):
            return memory
    return None


def masked_labels(labels: dict[str, Any]) -> dict[str, str]:
    """Scope labels as a memory stores them: the known keys, each value masked like the memory's text."""
    return {k: mask_text(v) for k, v in clean_labels(labels).items()}


@transaction.atomic
def memory_learn(*, session_id: Any, learned: list[Learned], alert_type: str, chain_id: str,
                 alert_labels: dict[str, str], embedding_model: str = "") -> LearnOutcome:
    """Store what a reflection found: a near-duplicate of an active memory confirms it (confidence up) when the
    session is independent of the memory's sources, instead of adding a copy; one of a retired or held memory
    is dropped (an engineer said no, or has yet to say yes). A held candidate is stored pending, never active.
    Locks only the memory it confirms; the quota of the alert type is enforced before commit."""
    now = timezone.now()
    outcome = LearnOutcome()
    sid = str(session_id)
    created: list[Memory] = []
    for item in learned:
        text = mask_text(item.candidate.text)[:MAX_MEMORY_CHARS]
        pool = [*duplicate_pool(alert_type=alert_type, text=text), *created]
        same = _duplicate(text, item.embedding, embedding_model, pool)
        if same is not None:
            if same.state == MemoryState.ACTIVE and not item.held:  # a retired or held one is only a reason to drop
                same = Memory.objects.select_for_update().get(id=same.id)
                if same.state == MemoryState.ACTIVE:  # still, now that it is locked
                    _found_again(same, sid, item.candidate.evidence_ids, now, outcome)
                    continue
            outcome.dropped.append((item.candidate, _duplicate_dropped(same, item.held)))
            continue
        labels = masked_labels(item.candidate.labels) or masked_labels(alert_labels)
        memory = Memory.objects.create(
            kind=item.candidate.kind, text=text, alert_type=alert_type, chain_id=chain_id, labels=labels,
            session_id=session_id, source_sessions=[sid], evidence_ids=item.candidate.evidence_ids,
            confidence=LEARNED_CONFIDENCE, embedding=item.embedding, embedding_model=embedding_model if
            item.embedding else "", confirmed_at=now, state=MemoryState.PENDING if item.held else MemoryState.ACTIVE,
            review_reason=item.held[:500])
        held = f"; waits for review: {item.held}" if item.held else ""
        memory_change_record(memory=memory, action=MemoryChangeAction.LEARNED, actor=ACTOR_REFLECTION, before=None,
                             reason=f"learned from session {session_id}{held}")
        created.append(memory)
        outcome.stored.append(memory)
    if created:
        memory_quota_enforce(alert_type=alert_type, keep_ids=[m.id for m in created])
    return outcome


def _duplicate_dropped(same: Memory, held: str) -> str:
    """Why a near-duplicate of `same` is neither stored nor counted as a confirmation."""
    if same.state == MemoryState.RETIRED:
        return f"a near-duplicate of {cite_memory(same.id)}, which was retired: {same.retired_reason or 'no reason'}"
    if same.state == MemoryState.PENDING:
        return f"a near-duplicate of {cite_memory(same.id)}, which waits for review"
    return (f"a near-duplicate of {cite_memory(same.id)}; it waits for review itself ({held}), so it cannot confirm "
            f"an active memory")


def _found_again(memory: Memory, session_id: str, evidence_ids: list[str], now, outcome: LearnOutcome) -> None:
    before = memory_snapshot(memory)
    if session_id in memory.source_sessions:  # the same session again (scored, then reviewed): no new support
        if str(memory.session_id) == session_id:
            memory.evidence_ids = list(dict.fromkeys([*memory.evidence_ids, *evidence_ids]))
            memory.save(update_fields=["evidence_ids", "updated_at"])
    else:
        reason = confirmation_refused(memory=memory, session_id=session_id)
        if reason:
            outcome.not_counted.append((memory, reason))
            return
        memory.confidence = _clamp(memory.confidence + CONFIRM_STEP)
        memory.source_sessions = [*memory.source_sessions, session_id]
        memory.confirmed_at = now
        memory.save(update_fields=["confidence", "source_sessions", "confirmed_at", "updated_at"])
        outcome.confirmed.append(memory)
    if memory_snapshot(memory) != before:
        memory_change_record(memory=memory, action=MemoryChangeAction.CONFIRMED, actor=ACTOR_REFLECTION,
                             before=before, reason=f"found again by the reflection on session {session_id}")


def confirmation_refused(*, memory: Memory, session_id: Any) -> str:
    """Why the session finding the memory again is no independent confirmation ("" when it is): it was shown the
    memory (recalled into its prompt, or returned by `recall_past_investigations`) before concluding, or its
    alert repeats a source session's (same fingerprint) or belongs to the same correlation group (related)."""
    events = TimelineEvent.objects.filter(session_id=session_id)
    if memory.id in recalled_in_session(session_id=session_id) or events.filter(
            event_type__in=TOOL_RESULT_EVENTS, content__contains=cite_memory(memory.id)).exists():
        return f"session {session_id} was shown M{memory.id}: it cannot confirm what it was told"
    this = AlertSession.all_objects.filter(id=session_id).values("fingerprint", "group_key").first()
    if this is None:
        return ""
    ids = [s for s in memory.source_sessions if _is_uuid(s)]  # a fixture's source may name no session here
    sources = AlertSession.all_objects.filter(id__in=ids).values("id", "fingerprint", "group_key")
    for source in sources:
        if this["fingerprint"] and source["fingerprint"] == this["fingerprint"]:
            return f"a repeat of session {source['id']}'s alert (same fingerprint)"
        if this["group_key"] and source["group_key"] == this["group_key"]:
            return f"related to session {source['id']}'s alert (same correlation group)"
    return ""


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def memory_release_unscoped(*, session_id: Any) -> list[Memory]:
    """The session was reviewed accurate: its memories held only for lacking scope labels go live (recall keeps
    them to their alert type). Memories held for any other reason wait for an engineer's approval."""
    rows = Memory.objects.filter(session_id=session_id, state=MemoryState.PENDING, review_reason=UNSCOPED)
    released = list(rows)
    for memory in released:
        before = memory_snapshot(memory)
        memory.state = MemoryState.ACTIVE
        memory.save(update_fields=["state", "updated_at"])
        memory_change_record(memory=memory, action=MemoryChangeAction.REVIEWED, actor=ACTOR_REVIEW, before=before,
                             reason=f"session {session_id} reviewed accurate: an unscoped memory goes live")
    return released


@transaction.atomic
def memory_review_adjust(*, session_id: Any, rating: str, previous: str | None = None, reviewer: str = "") -> int:
    """An engineer rated the session: its memories' confidence follows (accurate up, partially down, inaccurate
    retires those it produced and lowers those it only confirmed). A review saved again with the same rating
    changes nothing. Returns how many memories changed."""
    if rating == previous:
        return 0
    sid = str(session_id)
    session = AlertSession.all_objects.filter(id=session_id).values("alert_type").first()
    if session is None:
        return 0
    now = timezone.now()
    changed = 0
    live = [MemoryState.ACTIVE, MemoryState.PENDING]  # a held memory of a session found wrong is retired too
    rows = (Memory.objects.select_for_update()  # only the memories the session produced or confirmed
            .filter(Q(session_id=session_id) | Q(source_sessions__icontains=sid), state__in=live,
                    alert_type__in=[session["alert_type"], ""]))
    for memory in rows:
        if sid not in memory.source_sessions and str(memory.session_id) != sid:
            continue
        before = memory_snapshot(memory)
        produced = str(memory.session_id) == sid
        if rating == Rating.INACCURATE and produced:
            memory.state, memory.retired_reason = MemoryState.RETIRED, f"session {sid} was reviewed inaccurate"
        else:
            steps: dict[str, float] = {Rating.ACCURATE: ACCURATE_STEP, Rating.PARTIALLY_ACCURATE: PARTIAL_STEP}
            step = steps.get(rating, INACCURATE_STEP)
            memory.confidence = _clamp(memory.confidence + step)
            if step > 0:
                memory.confirmed_at = now
            elif memory.confidence < RETIRE_BELOW:
                memory.state = MemoryState.RETIRED
                memory.retired_reason = f"confidence fell below {RETIRE_BELOW} after a review of session {sid}"
        memory.save(update_fields=["state", "retired_reason", "confidence", "confirmed_at", "updated_at"])
        action = MemoryChangeAction.RETIRED if memory.state == MemoryState.RETIRED else MemoryChangeAction.REVIEWED
        memory_change_record(memory=memory, action=action, actor=reviewer or ACTOR_REVIEW, before=before,
                             reason=f"session {sid} was reviewed {rating}")
        changed += 1
    return changed


@transaction.atomic
def memory_mark_used(*, memory_ids: list[int], session_id: Any) -> None:
    """The memories were injected into a prompt of the session: one use per session, however many of its stages,
    agents or chats recall them again. Their rows stay locked (in id order) to the caller's commit, which must
    carry the session's `memory.recalled` event: two executions of one session starting together count once."""
    locked = list(Memory.objects.select_for_update().filter(id__in=memory_ids).order_by("id")
                  .values_list("id", flat=True))
    new = set(locked) - recalled_in_session(session_id=session_id)
    Memory.objects.filter(id__in=new).update(use_count=F("use_count") + 1)
    Memory.objects.filter(id__in=locked).update(last_used_at=timezone.now())


def recalled_in_session(*, session_id: Any) -> set[int]:
    """Ids of the memories any prompt of the session carried (its `memory.recalled` events, chat included)."""
    recalled: set[int] = set()
    for metadata in TimelineEvent.objects.filter(session_id=session_id, event_type=TimelineEventType.MEMORY_RECALLED
                                                 ).values_list("metadata", flat=True):
        recalled.update(i for i in (metadata or {}).get("memory_ids", []) if isinstance(i, int))
    return recalled


def memory_get(*, memory_id: Any) -> Memory:
    try:
        return Memory.objects.get(id=memory_id)
    except (Memory.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound(f"memory {memory_id} not found") from exc


@transaction.atomic
def memory_create(*, kind: str, text: str, alert_type: str = "", chain_id: str = "",
                  labels: dict[str, Any] | None = None, confidence: float = LEARNED_CONFIDENCE,
                  source_sessions: list[str] | None = None, evidence_ids: list[str] | None = None,
                  actor: str = ACTOR_SYSTEM) -> Memory:
    """A memory written by a person (or a fixture): masked, validated, recorded and held to the quota like a
    learned one. `source_sessions` names where it was learned when that session is not in this database (an eval
    fixture's prior incident)."""
    _check(kind=kind, text=text, confidence=confidence)
    memory = Memory.objects.create(kind=kind, text=mask_text(" ".join(text.split()))[:MAX_MEMORY_CHARS],
                                   alert_type=alert_type, chain_id=chain_id, labels=masked_labels(labels or {}),
                                   confidence=confidence, confirmed_at=timezone.now(),
                                   source_sessions=[str(s) for s in source_sessions or []],
                                   evidence_ids=list(evidence_ids or []))
    memory_change_record(memory=memory, action=MemoryChangeAction.CREATED, actor=actor, before=None)
    memory_quota_enforce(alert_type=alert_type, keep_ids=[memory.id])
    return memory


def memory_with_changes(*, memory_id: Any) -> Memory:
    """A memory with its record of changes loaded (newest first)."""
    try:
        return Memory.objects.prefetch_related("changes").get(id=memory_id)
    except (Memory.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound(f"memory {memory_id} not found") from exc


def _check(*, kind: str | None = None, text: str | None = None, confidence: float | None = None) -> None:
    if kind is not None and kind not in KINDS:
        raise ValidationFailed(f"unknown memory kind {kind!r}", {"kind": [f"One of: {', '.join(KINDS)}."]})
    if text is not None and not text.strip():
        raise ValidationFailed("a memory needs text", {"text": ["This field may not be blank."]})
    if text is not None and len(text) > MAX_MEMORY_CHARS:
        raise ValidationFailed("memory text is too long", {"text": [f"At most {MAX_MEMORY_CHARS} characters."]})
    if confidence is not None and not 0 <= confidence <= 1:
        raise ValidationFailed("confidence is between 0 and 1", {"confidence": ["Between 0 and 1."]})


def _locked(memory_id: Any) -> Memory:
    try:
        return Memory.objects.select_for_update().get(id=memory_id)
    except (Memory.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound(f"memory {memory_id} not found") from exc


@transaction.atomic
def memory_update(*, memory_id: Any, kind: str | None = None, text: str | None = None,
                  confidence: float | None = None, labels: dict[str, Any] | None = None,
                  state: str | None = None, actor: str = ACTOR_SYSTEM) -> Memory:
    """An engineer's correction, recorded with its before and after. New text drops the stored embedding (it
    described the old text): the memory is found by keyword until a reflection confirms it again. `state`
    retired retires it (a recorded step of its own); an edit never brings a retired memory back: that is
    `memory_reactivate`, with a reason."""
    _check(kind=kind, text=text, confidence=confidence)
    if state is not None and state not in MemoryState.values:
        raise ValidationFailed(f"unknown state {state!r}", {"state": [f"One of: {', '.join(MemoryState.values)}."]})
    memory = _locked(memory_id)
    if state == MemoryState.ACTIVE and memory.state == MemoryState.RETIRED:
        raise ValidationFailed(f"memory {memory.id} is retired: an edit does not reactivate it",
                               {"state": ["Reactivate with POST /api/v1/memories/<id>/reactivate and a reason."]})
    if state == MemoryState.PENDING and memory.state != MemoryState.PENDING:
        raise ValidationFailed(f"memory {memory.id} is {memory.state}: only a reflection holds a memory for review",
                               {"state": ["Set active (approve a held memory) or retired."]})
    before = memory_snapshot(memory)
    if kind is not None:
        memory.kind = kind
    if text is not None and mask_text(" ".join(text.split())) != memory.text:
        memory.text, memory.embedding, memory.embedding_model = mask_text(" ".join(text.split())), None, ""
    if confidence is not None:
        memory.confidence = confidence
    if labels is not None:
        memory.labels = masked_labels(labels)
    if memory_snapshot(memory) != before:
        memory.save()
        memory_change_record(memory=memory, action=MemoryChangeAction.EDITED, actor=actor, before=before)
    if state == MemoryState.RETIRED:
        memory = memory_retire(memory_id=memory.id, actor=actor)
    elif state == MemoryState.ACTIVE and memory.state == MemoryState.PENDING:
        _approve(memory, actor=actor)
    return memory


def _approve(memory: Memory, *, actor: str) -> None:
    """An engineer read a memory held for review and let it be recalled; why it was held stays on the memory."""
    before = memory_snapshot(memory)
    reason = f"approved after review (it waited: {memory.review_reason})"
    memory.state = MemoryState.ACTIVE
    memory.save(update_fields=["state", "updated_at"])
    memory_change_record(memory=memory, action=MemoryChangeAction.REVIEWED, actor=actor, before=before, reason=reason)


@transaction.atomic
def memory_retire(*, memory_id: Any, reason: str = "retired by an engineer", actor: str = ACTOR_SYSTEM) -> Memory:
    """Stop recalling a memory; kept with the reason, and the step recorded (retiring a retired one changes
    nothing)."""
    memory = _locked(memory_id)
    if memory.state == MemoryState.RETIRED:
        return memory
    before = memory_snapshot(memory)
    memory.state, memory.retired_reason = MemoryState.RETIRED, mask_text(reason)[:500]
    memory.save(update_fields=["state", "retired_reason", "updated_at"])
    memory_change_record(memory=memory, action=MemoryChangeAction.RETIRED, actor=actor, before=before,
                         reason=reason)
    return memory


@transaction.atomic
def memory_reactivate(*, memory_id: Any, reason: str, actor: str) -> Memory:
    """A person brings a retired memory back into recall: an explicit step with its reason, recorded; the quota
    of its alert type then retires another if it must."""
    if not reason.strip():
        raise ValidationFailed("reactivating a memory needs a reason", {"reason": ["This field may not be blank."]})
    memory = _locked(memory_id)
    if memory.state == MemoryState.ACTIVE:
        raise ValidationFailed(f"memory {memory.id} is already active", {"state": ["The memory is active."]})
    before = memory_snapshot(memory)
    memory.state, memory.retired_reason = MemoryState.ACTIVE, ""
    memory.save(update_fields=["state", "retired_reason", "updated_at"])
    memory_change_record(memory=memory, action=MemoryChangeAction.REACTIVATED, actor=actor, before=before,
                         reason=reason)
    memory_quota_enforce(alert_type=memory.alert_type, keep_ids=[memory.id])
    return memory


def reflection_due(*, session_id: Any, trigger: str) -> int | None:
    """The reflection's number for this session (1 for its first: a scripted reflector answers by it), or None
    when one already ran after the trigger (a redelivered task, or a trigger that has gone: no score, no review)."""
    from tarsy.models import InteractionType, LLMInteraction, SessionReview, SessionScore

    if trigger == "score":
        since = SessionScore.objects.filter(session_id=session_id).values_list("scored_at", flat=True).first()
    elif trigger == "review":
        since = SessionReview.objects.filter(session_id=session_id).values_list("updated_at", flat=True).first()
    else:
        since = AlertSession.all_objects.filter(id=session_id).values_list("completed_at", flat=True).first()
    if since is None:
        return None
    done = LLMInteraction.objects.filter(session_id=session_id, interaction_type=InteractionType.MEMORY_REFLECTION)
    if done.filter(created_at__gte=since).exists():
        return None
    return done.count() + 1
