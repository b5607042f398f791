"""Triage actions on finished sessions: claim, assign, acknowledge, resolve, reopen, each logged and published.

Every action locks the session row (SELECT … FOR NO KEY UPDATE) and checks the state it expects, so two people
acting at once are serialised: the second sees the first's result and gets a Conflict instead of overwriting it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from agents.config.schema import AutoDismissConfig
from agents.mcp.masking.boundary import mask_text
from tarsy.config import get_config
from tarsy.errors import Conflict, NotFound, ValidationFailed
from tarsy.metrics import TRIAGE_TIME_TO_CLAIM, TRIAGE_TIME_TO_RESOLVE
from tarsy.models import (
    TERMINAL_SESSION_STATUSES,
    TRIAGE_ACTIONS,
    TRIAGE_BULK_ACTIONS,
    TRIAGE_MAX_BULK,
    TRIAGE_MAX_NOTE_CHARS,
    AlertSession,
    Resolution,
    SessionStatus,
    TriageActivity,
    TriageStatus,
)
from tarsy.selectors.queue import SEVERITY_RANK
from tarsy.signals import triage_changed
from tarsy.streaming.publisher import SESSIONS_CHANNEL, session_channel

from .events import publish

TRIAGE_EVENT = "triage.updated"
SYSTEM_ACTOR = "system"  # the chain's auto-dismiss policy acting, not a person


def _locked(session_id: Any) -> AlertSession:
    try:
        session = AlertSession.objects.select_for_update(no_key=True).get(id=session_id)
    except (AlertSession.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound(f"session {session_id} not found") from exc
    if session.status not in TERMINAL_SESSION_STATUSES:
        raise Conflict(f"session is {session.status}: triage starts once it has finished", {"status": session.status})
    if not session.triage_status:  # finished before triage existed
        session.triage_status = TriageStatus.NEEDS_REVIEW
    return session


def _note(note: str) -> str:
    note = (note or "").strip()
    if len(note) > TRIAGE_MAX_NOTE_CHARS:
        raise ValidationFailed("note is too long", {"note": [f"At most {TRIAGE_MAX_NOTE_CHARS} characters."]})
    return mask_text(note)


def _expect(session: AlertSession, action: str, *allowed: str) -> None:
    if session.triage_status not in allowed:
        raise Conflict(f"cannot {action}: triage is {session.triage_status}"
                       + (f" (assigned to {session.assignee})" if session.assignee else ""),
                       {"triage_status": session.triage_status, "assignee": session.assignee})


def _apply(session: AlertSession, *, actor: str, action: str, to: str, assignee: str, resolution: str = "",
           resolution_note: str = "", note: str = "", observe: bool = True) -> AlertSession:
    previous = session.triage_status or ""
    if observe:  # the waiting-time histograms: people's actions, not the policy's
        _observe_on_commit(session, previous=previous, to=to, resolution=resolution)
    session.triage_status, session.assignee = to, assignee
    session.resolution, session.resolution_note = resolution, resolution_note
    session.triage_changed_at = timezone.now()
    session.save(update_fields=["triage_status", "assignee", "resolution", "resolution_note", "triage_changed_at"])
    TriageActivity.objects.create(session=session, actor=actor[:255], action=action, from_status=previous,
                                  to_status=to, assignee=assignee, resolution=resolution, note=note)
    triage_publish(session, action=action, actor=actor)
    triage_changed.send(sender=AlertSession, session=session, action=action, actor=actor[:255], note=note)
    return session


def _needs_review_since(session: AlertSession) -> datetime | None:
    """When the session last entered needs_review: its latest reopen, else its completion."""
    reopened = (session.triage_activity.filter(to_status=TriageStatus.NEEDS_REVIEW).order_by("-created_at")
                .values_list("created_at", flat=True).first())
    return reopened or session.completed_at


def _observe_on_commit(session: AlertSession, *, previous: str, to: str, resolution: str) -> None:
    """Time to claim (first owner) and time to resolve, from the needs_review entry, once the change is committed;
    the policy's own dismissals are left out (nobody was waiting for them)."""
    claimed = previous == TriageStatus.NEEDS_REVIEW and to == TriageStatus.IN_PROGRESS
    resolved = previous != TriageStatus.RESOLVED and to == TriageStatus.RESOLVED
    since = _needs_review_since(session) if claimed or resolved else None
    if since is None:
        return
    waited = max((timezone.now() - since).total_seconds(), 0.0)
    if claimed:
        transaction.on_commit(lambda: TRIAGE_TIME_TO_CLAIM.observe(waited))
    if resolved:
        transaction.on_commit(lambda: TRIAGE_TIME_TO_RESOLVE.labels(resolution).observe(waited))


def triage_publish(session: AlertSession, *, action: str, actor: str) -> None:
    """Tell the session's page and the lists (a Triage view) the session's triage state, in the writer's
    transaction; `finish` is the automatic needs_review of a session that just finished."""
    publish(TRIAGE_EVENT, {"session_id": str(session.id), "triage_status": session.triage_status,
                           "assignee": session.assignee, "resolution": session.resolution, "action": action,
                           "actor": actor[:255]},
            session_id=session.id, channels=[session_channel(session.id), SESSIONS_CHANNEL])


def known_assignee(name: str) -> str:
    """An assignee must be someone who can sign in: an active user (dashboard, admin, API token), or in proxy
    mode any identity the proxy may send (those are not stored anywhere to check against)."""
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("assignee is required", {"assignee": ["This field is required."]})
    if len(name) > 255:
        raise ValidationFailed("assignee is too long", {"assignee": ["At most 255 characters."]})
    if get_config().system.auth.mode == "proxy":
        return name
    user_model = get_user_model()
    if not user_model.objects.filter(**{user_model.USERNAME_FIELD: name, "is_active": True}).exists():
        raise ValidationFailed(f"unknown user {name!r}", {"assignee": ["No active user has this name."]})
    return name


@transaction.atomic
def claim(*, session_id: Any, actor: str, note: str = "") -> AlertSession:
    """Take a session for yourself; only an unowned one (needs review), so two claims never both win."""
    session = _locked(session_id)
    _expect(session, "claim", TriageStatus.NEEDS_REVIEW)
    return _apply(session, actor=actor, action="claim", to=TriageStatus.IN_PROGRESS, assignee=actor[:255],
                  note=_note(note))


@transaction.atomic
def assign(*, session_id: Any, actor: str, assignee: str, note: str = "") -> AlertSession:
    """Hand an open session to someone (a hand-over between shifts included)."""
    assignee = known_assignee(assignee)
    session = _locked(session_id)
    _expect(session, "assign", TriageStatus.NEEDS_REVIEW, TriageStatus.IN_PROGRESS)
    return _apply(session, actor=actor, action="assign", to=TriageStatus.IN_PROGRESS, assignee=assignee,
                  note=_note(note))


@transaction.atomic
def acknowledge(*, session_id: Any, actor: str, note: str = "") -> AlertSession:
    """One click: seen, nothing to do — resolved as dismissed."""
    session = _locked(session_id)
    _expect(session, "acknowledge", TriageStatus.NEEDS_REVIEW, TriageStatus.IN_PROGRESS)
    masked = _note(note)
    return _apply(session, actor=actor, action="acknowledge", to=TriageStatus.RESOLVED,
                  assignee=session.assignee or actor[:255], resolution=Resolution.DISMISSED, resolution_note=masked,
                  note=masked)


@transaction.atomic
def resolve(*, session_id: Any, actor: str, resolution: str, note: str = "") -> AlertSession:
    if resolution not in Resolution.values:
        raise ValidationFailed("resolution is required" if not resolution else f"unknown resolution {resolution!r}",
                               {"resolution": [f"One of: {', '.join(Resolution.values)}."]})
    masked = _note(note)
    session = _locked(session_id)
    _expect(session, "resolve", TriageStatus.NEEDS_REVIEW, TriageStatus.IN_PROGRESS)
    return _apply(session, actor=actor, action="resolve", to=TriageStatus.RESOLVED,
                  assignee=session.assignee or actor[:255], resolution=resolution, resolution_note=masked,
                  note=masked)


@transaction.atomic
def reopen(*, session_id: Any, actor: str, note: str = "") -> AlertSession:
    """Back to needs review, unowned: the resolution is cleared (the activity log keeps it)."""
    session = _locked(session_id)
    _expect(session, "reopen", TriageStatus.RESOLVED)
    return _apply(session, actor=actor, action="reopen", to=TriageStatus.NEEDS_REVIEW, assignee="",
                  note=_note(note))


def triage_act(*, session_id: Any, actor: str, action: str, assignee: str = "", resolution: str = "",
               note: str = "") -> AlertSession:
    """Dispatch one action by name (the API's single endpoint)."""
    if action == "claim":
        return claim(session_id=session_id, actor=actor, note=note)
    if action == "assign":
        return assign(session_id=session_id, actor=actor, assignee=assignee, note=note)
    if action == "acknowledge":
        return acknowledge(session_id=session_id, actor=actor, note=note)
    if action == "resolve":
        return resolve(session_id=session_id, actor=actor, resolution=resolution, note=note)
    if action == "reopen":
        return reopen(session_id=session_id, actor=actor, note=note)
    raise ValidationFailed(f"unknown action {action!r}", {"action": [f"One of: {', '.join(TRIAGE_ACTIONS)}."]})


def triage_bulk(*, session_ids: list[Any], actor: str, action: str, resolution: str = "",
                note: str = "") -> list[dict[str, Any]]:
    """Claim or resolve many sessions; each in its own transaction, so one conflict does not undo the others."""
    if action not in TRIAGE_BULK_ACTIONS:
        raise ValidationFailed(f"unknown bulk action {action!r}",
                               {"action": [f"One of: {', '.join(TRIAGE_BULK_ACTIONS)}."]})
    if action == "resolve" and resolution not in Resolution.values:
        raise ValidationFailed("resolution is required" if not resolution else f"unknown resolution {resolution!r}",
                               {"resolution": [f"One of: {', '.join(Resolution.values)}."]})
    if not session_ids or len(session_ids) > TRIAGE_MAX_BULK:
        raise ValidationFailed(f"session_ids must hold 1 to {TRIAGE_MAX_BULK} ids",
                               {"session_ids": [f"1 to {TRIAGE_MAX_BULK} ids."]})
    results = []
    for session_id in session_ids:
        try:
            session = triage_act(session_id=session_id, actor=actor, action=action, resolution=resolution, note=note)
            results.append({"session_id": str(session_id), "ok": True, "triage_status": session.triage_status,
                            "error": None})
        except (Conflict, NotFound) as exc:
            results.append({"session_id": str(session_id), "ok": False, "triage_status": None,
                            "error": exc.message})
    return results


# ---- the chain's auto-dismiss policy (agent_chains.<id>.triage.auto_dismiss) ------------------------------------


def _policy(chain_id: str) -> AutoDismissConfig | None:
    chain = get_config().chains.get(chain_id)
    return chain.triage.auto_dismiss if chain else None


def _dismiss_reason(session: AlertSession, score: int | None) -> str:
    """Why the chain's policy dismisses this completed session, or "" when it does not."""
    rule = _policy(session.chain_id)
    if rule is None or session.status != SessionStatus.COMPLETED:
        return ""
    if SEVERITY_RANK.get(session.severity, 0) < SEVERITY_RANK[rule.max_severity]:
        return ""
    reason = f"auto-dismissed by chain {session.chain_id}: severity {session.severity} (at most {rule.max_severity})"
    if rule.min_score is None:
        return reason
    if score is None or score < rule.min_score:
        return ""
    return f"{reason}, automatic score {score} (at least {rule.min_score})"


def _auto_dismiss(session_id: Any, score: int | None) -> bool:
    session = AlertSession.all_objects.select_for_update(no_key=True).filter(id=session_id).first()
    # Only a session nobody has acted on: a person's claim, or a reopen after an earlier dismissal, stands.
    if session is None or session.triage_status != TriageStatus.NEEDS_REVIEW or session.triage_activity.exists():
        return False
    reason = _dismiss_reason(session, score)
    if not reason:
        return False
    _apply(session, actor=SYSTEM_ACTOR, action="auto_dismiss", to=TriageStatus.RESOLVED, assignee="",
           resolution=Resolution.DISMISSED, resolution_note=reason, note=reason, observe=False)
    return True


@transaction.atomic
def triage_on_finish(*, session: AlertSession) -> None:
    """A session just became terminal (needs_review in the same UPDATE): the chain's policy may dismiss it at
    once; otherwise the pages and lists hear that it waits for review."""
    rule = _policy(session.chain_id)  # most chains have none: no further query on every completion
    if rule is None or rule.min_score is not None or not _auto_dismiss(session.id, None):
        triage_publish(session, action="finish", actor="")


@transaction.atomic
def triage_on_score(*, session_id: Any, score: int) -> bool:
    """A completed session's automatic score landed: a policy with `min_score` may dismiss it now."""
    chain_id = AlertSession.all_objects.filter(id=session_id).values_list("chain_id", flat=True).first()
    return chain_id is not None and _policy(chain_id) is not None and _auto_dismiss(session_id, score)
