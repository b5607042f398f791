"""Action proposals: created when an action agent's iteration completes, decided by a person (or expired), then
claimed and run once by the proposing execution's next iteration. Every transition is a field on the row and an
`action` event on the session's timeline.

What a decision means for the execution (its wake, what it is told) is tarsy.pipeline.actions'.

Guards (docs/investigations.md): a proposal on a session whose alert resolved is withdrawn, at once or when the
resolution arrives; so is one whose execution ended before it ran, and one that execution had claimed becomes a
failure of unknown effect. The time proposals wait for a person is not the session's (`actions_wait_s`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, Q
from django.utils import timezone

from agents.timeline_events import TimelineEventType, event_metadata
from tarsy.errors import Conflict, NotFound
from tarsy.metrics import ACTION_APPROVAL_WAIT, ACTION_TRANSITIONS
from tarsy.models import (
    DECIDED_STATUSES,
    RATE_LIMITED_STATUSES,
    ActionOutcome,
    ActionProposal,
    AlertSession,
    DryRunStatus,
    ProposalStatus,
    TimelineEvent,
)
from tarsy.signals import action_changed

from . import timeline

ALERT_RESOLVED_REASON = "the alert resolved meanwhile"
INTERRUPTED = "Interrupted while it ran: whether it took effect is unknown; read the state before anything"


def action_proposal_create(*, execution: Any, iteration: int, server: str, tool: str, target: str,
                           arguments: dict[str, Any], justification: str, expected_effect: str, verify_tool: str,
                           verify_arguments: dict[str, Any], verify_expect: str, ttl_s: float, dry_run: str = "",
                           dry_run_status: str = DryRunStatus.UNSUPPORTED) -> ActionProposal:
    """Texts and arguments come masked. Call in the transaction completing the proposing iteration. On a session
    whose alert resolved since the agent asked, it is created withdrawn (the execution is told so): the session's
    row lock orders it with the resolution (which holds it while it withdraws), so neither misses the other."""
    AlertSession.all_objects.select_for_update(no_key=True).filter(id=execution.session_id).first()
    proposal = ActionProposal.objects.create(
        session_id=execution.session_id, execution_id=execution.id, iteration=iteration, server=server, tool=tool,
        target=target, arguments=arguments, justification=justification, expected_effect=expected_effect,
        verify_tool=verify_tool, verify_arguments=verify_arguments, verify_expect=verify_expect, dry_run=dry_run,
        dry_run_status=dry_run_status, expires_at=timezone.now() + timedelta(seconds=ttl_s))
    _audit(proposal, "proposed", actor=execution.agent_name,
           content=f"Proposed {server}.{tool} {arguments}: {expected_effect}\nWhy: {justification}")
    if session_alert_resolved(session_id=execution.session_id):
        _withdraw(proposal, ALERT_RESOLVED_REASON)
    return proposal


def session_alert_resolved(*, session_id: Any) -> bool:
    """The session's own alert was reported resolved (not merely a related alert of its group)."""
    return TimelineEvent.objects.filter(session_id=session_id, event_type=TimelineEventType.ALERT_RESOLVED).exclude(
        metadata__related=True).exists()


def actions_on_target(*, server: str, target: str, since: datetime) -> int:
    """Proposals on `target` since `since` that ran, run or may still run (what actions.rate_limit counts)."""
    return ActionProposal.objects.filter(server=server, created_at__gte=since, target=target,
                                         status__in=RATE_LIMITED_STATUSES).count()


def actions_wait_s(*, session_id: Any, now: datetime) -> float:
    """Seconds the session spent with a proposal waiting for a person (overlapping waits counted once): the
    session clock stops meanwhile (session_timeout counts without it)."""
    spans = sorted((created, decided or (now if status == ProposalStatus.PENDING else created))
                   for created, decided, status in ActionProposal.objects.filter(session_id=session_id)
                   .values_list("created_at", "decided_at", "status"))
    merged: list[list[datetime]] = []
    for begin, finish in spans:
        if merged and begin <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], finish)
        else:
            merged.append([begin, finish])
    return sum((finish - begin).total_seconds() for begin, finish in merged)


def actions_pending_count(*, session_id: Any) -> int:
    return ActionProposal.objects.filter(session_id=session_id, status=ProposalStatus.PENDING).count()


def actions_waiting(*, execution_id: Any) -> bool:
    """A proposal of the execution still waits for a person."""
    return ActionProposal.objects.filter(execution_id=execution_id, status=ProposalStatus.PENDING).exists()


def actions_undelivered(*, execution_id: Any) -> bool:
    """A decision the execution has not been told yet."""
    return ActionProposal.objects.filter(execution_id=execution_id, status__in=DECIDED_STATUSES,
                                         delivered_in_iteration__isnull=True).exists()


def action_decide(*, proposal_id: Any, approve: bool, actor: str, comment: str) -> ActionProposal:
    """Approve or reject a pending proposal (under its row lock: two decisions never both win). `comment`: masked."""
    proposal = ActionProposal.objects.select_for_update().select_related("execution").filter(id=proposal_id).first()
    if proposal is None:
        raise NotFound(f"action {proposal_id} not found")
    action_check_decidable(proposal)
    proposal.status = ProposalStatus.APPROVED if approve else ProposalStatus.REJECTED
    proposal.decided_by, proposal.decided_at, proposal.comment = actor, timezone.now(), comment
    proposal.save(update_fields=["status", "decided_by", "decided_at", "comment"])
    _audit(proposal, proposal.status, actor=actor, content=comment)
    return proposal


def action_check_decidable(proposal: ActionProposal) -> None:
    """Raise Conflict unless a person may still decide the proposal: pending, not expired, its investigation not
    ended. The decision checks under the row lock; a form asking why checks before it opens."""
    if proposal.status == ProposalStatus.WITHDRAWN:
        raise Conflict(f"action {proposal.id} was withdrawn: {proposal.reason}")
    if proposal.status != ProposalStatus.PENDING:
        raise Conflict(f"action {proposal.id} is already {proposal.status}")
    if proposal.expires_at <= timezone.now():
        raise Conflict(f"action {proposal.id} expired at {proposal.expires_at.isoformat()}; the agent must propose "
                       "it again")
    if proposal.execution.is_terminal:
        raise Conflict(f"the investigation that proposed action {proposal.id} has ended")


def actions_expired(*, now: datetime) -> list[Any]:
    return list(ActionProposal.objects.filter(status=ProposalStatus.PENDING, expires_at__lte=now)
                .values_list("id", flat=True))


def action_expire(*, proposal_id: Any) -> ActionProposal | None:
    """Under the row lock: a pending proposal past its time becomes expired (returned), else None."""
    proposal = ActionProposal.objects.select_for_update().filter(id=proposal_id).first()
    if proposal is None or proposal.status != ProposalStatus.PENDING or proposal.expires_at > timezone.now():
        return None
    proposal.status, proposal.decided_at = ProposalStatus.EXPIRED, timezone.now()
    proposal.save(update_fields=["status", "decided_at"])
    _audit(proposal, ProposalStatus.EXPIRED, actor=None, content="Nobody decided in time")
    return proposal


def actions_withdraw(*, session_id: Any, reason: str) -> list[Any]:
    """Withdraw the session's proposals that have not run (pending, or approved and not claimed yet: an
    execution claims only an approved one, so what this withdraws never runs). Returns their executions' ids."""
    rows = ActionProposal.objects.select_for_update().filter(
        session_id=session_id, status__in=(ProposalStatus.PENDING, ProposalStatus.APPROVED)).order_by("created_at")
    return list(dict.fromkeys(_withdraw(p, reason).execution_id for p in rows))


UNSETTLED_STATUSES = (ProposalStatus.PENDING, ProposalStatus.APPROVED, ProposalStatus.EXECUTING)


def actions_unsettled(*, execution_id: Any) -> Exists:
    """An expression: the execution has a proposal pending, approved or executing (read with another query)."""
    return Exists(ActionProposal.objects.filter(execution_id=execution_id, status__in=UNSETTLED_STATUSES))


def actions_settle_ended(*, execution_ids: list[Any], ended_as: str) -> None:
    """In the transaction ending these executions: what they proposed and never ran is withdrawn; what they
    claimed and did not finish failed, its effect unknown. Nothing is left pending, approved or executing."""
    rows = ActionProposal.objects.select_for_update().filter(
        execution_id__in=execution_ids, status__in=UNSETTLED_STATUSES).order_by("created_at")
    for proposal in rows:
        if proposal.status == ProposalStatus.EXECUTING:
            _executed(proposal, outcome=ActionOutcome.FAILED, result=INTERRUPTED, evidence="")
        else:
            _withdraw(proposal, f"the investigation ended ({ended_as}) before it ran")


def _withdraw(proposal: ActionProposal, reason: str) -> ActionProposal:
    was_pending = proposal.status == ProposalStatus.PENDING
    proposal.status, proposal.reason = ProposalStatus.WITHDRAWN, reason
    proposal.decided_at = proposal.decided_at if not was_pending else timezone.now()
    proposal.save(update_fields=["status", "reason", "decided_at"])
    _audit(proposal, ProposalStatus.WITHDRAWN, actor=None, content=f"Withdrawn: {reason}", waited=was_pending)
    return proposal


def actions_decided_take(*, execution_id: Any, iteration: int) -> list[ActionProposal]:
    """The execution's decided proposals it has not been told of, or told in `iteration` (a re-run of a discarded
    attempt is told again), marked as told in `iteration`."""
    rows = list(ActionProposal.objects.filter(execution_id=execution_id, status__in=DECIDED_STATUSES).filter(
        Q(delivered_in_iteration__isnull=True) | Q(delivered_in_iteration=iteration)).order_by("created_at"))
    ActionProposal.objects.filter(id__in=[r.id for r in rows]).update(delivered_in_iteration=iteration)
    return rows


def action_claim(*, proposal_id: Any) -> bool:
    """Approved → executing, committed before the tool runs: an attempt that dies after this never runs it again."""
    with transaction.atomic():
        return bool(ActionProposal.objects.filter(id=proposal_id, status=ProposalStatus.APPROVED).update(
            status=ProposalStatus.EXECUTING, executed_at=timezone.now()))


def action_executed(*, proposal_id: Any, outcome: str, result: str, evidence: str) -> ActionProposal:
    """Record how it went (texts masked); committed at once, whatever becomes of the iteration. A run that ends
    after its execution was ended (and the proposal recorded as interrupted) replaces that unknown outcome."""
    with transaction.atomic():
        proposal = ActionProposal.objects.select_for_update().get(id=proposal_id)
        return _executed(proposal, outcome=outcome, result=result, evidence=evidence)


def _executed(proposal: ActionProposal, *, outcome: str, result: str, evidence: str) -> ActionProposal:
    proposal.status, proposal.outcome = ProposalStatus.EXECUTED, outcome
    proposal.result, proposal.evidence = result, evidence
    proposal.save(update_fields=["status", "outcome", "result", "evidence"])
    _audit(proposal, ProposalStatus.EXECUTED, actor=None, outcome=outcome,
           content=f"{proposal.server}.{proposal.tool}: {outcome}\n{evidence or result}")
    return proposal


def actions_of_execution(*, execution_id: Any) -> list[ActionProposal]:
    return list(ActionProposal.objects.filter(execution_id=execution_id).order_by("created_at"))


def actions_of_session(*, session_id: Any) -> list[ActionProposal]:
    return list(ActionProposal.objects.filter(session_id=session_id).order_by("created_at"))


def actions_list(*, status: str | None) -> list[ActionProposal]:
    rows = ActionProposal.objects.order_by("-created_at")
    return list((rows.filter(status=status) if status else rows)[:500])


def action_get(*, proposal_id: Any) -> ActionProposal:
    proposal = ActionProposal.objects.filter(id=proposal_id).first()
    if proposal is None:
        raise NotFound(f"action {proposal_id} not found")
    return proposal


_DECISIONS = (ProposalStatus.APPROVED, ProposalStatus.REJECTED, ProposalStatus.EXPIRED)


def _audit(proposal: ActionProposal, transition: str, *, actor: str | None, content: str,
           outcome: str | None = None, waited: bool | None = None) -> None:
    """The session's timeline entry of a transition (a session-level event: it is no iteration's output), the
    signal integrations (Slack) follow, and its /metrics count once committed (with the wait for a person, when
    it ends one). `waited`: whether this transition ends the wait (default: a decision does, what follows one
    does not)."""
    labels = (proposal.server, proposal.tool, str(transition), outcome or "")
    transaction.on_commit(lambda: ACTION_TRANSITIONS.labels(*labels).inc())
    if waited if waited is not None else transition in _DECISIONS:
        seconds = max(((proposal.decided_at or timezone.now()) - proposal.created_at).total_seconds(), 0.0)
        transaction.on_commit(lambda: ACTION_APPROVAL_WAIT.labels(str(transition)).observe(seconds))
    timeline.timeline_event_create(
        session_id=proposal.session_id, event_type=TimelineEventType.ACTION, content=content,
        metadata=event_metadata(TimelineEventType.ACTION, server_name=proposal.server, tool_name=proposal.tool,
                                proposal_id=str(proposal.id), transition=str(transition), actor=actor,
                                outcome=outcome))
    action_changed.send(sender=ActionProposal, proposal=proposal, transition=str(transition))
