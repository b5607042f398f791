"""Action proposals: created when an action agent's iteration completes, decided by a person (or expired), then
claimed and run once by the proposing execution's next iteration. Every transition is a field on the row and an
`action` event on the session's timeline.

What a decision means for the execution (its wake, what it is told) is tarsy.pipeline.actions'.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents.timeline_events import TimelineEventType, event_metadata
from tarsy.models import DECIDED_STATUSES, ActionProposal, DryRunStatus, ProposalStatus
from tarsy.signals import action_changed

from . import timeline
from .errors import Conflict, NotFound


def action_proposal_create(*, execution: Any, iteration: int, server: str, tool: str, arguments: dict[str, Any],
                           justification: str, expected_effect: str, verify_tool: str,
                           verify_arguments: dict[str, Any], verify_expect: str, ttl_s: float, dry_run: str = "",
                           dry_run_status: str = DryRunStatus.UNSUPPORTED) -> ActionProposal:
    """Texts and arguments come masked. Call in the transaction completing the proposing iteration."""
    proposal = ActionProposal.objects.create(
        session_id=execution.session_id, execution_id=execution.id, iteration=iteration, server=server, tool=tool,
        arguments=arguments, justification=justification, expected_effect=expected_effect, verify_tool=verify_tool,
        verify_arguments=verify_arguments, verify_expect=verify_expect, dry_run=dry_run,
        dry_run_status=dry_run_status, expires_at=timezone.now() + timedelta(seconds=ttl_s))
    _audit(proposal, "proposed", actor=execution.agent_name,
           content=f"Proposed {server}.{tool} {arguments}: {expected_effect}\nWhy: {justification}")
    return proposal


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
    if proposal.status != ProposalStatus.PENDING:
        raise Conflict(f"action {proposal_id} is already {proposal.status}")
    if proposal.expires_at <= timezone.now():
        raise Conflict(f"action {proposal_id} expired at {proposal.expires_at.isoformat()}; the agent must propose "
                       "it again")
    if proposal.execution.is_terminal:
        raise Conflict(f"the investigation that proposed action {proposal_id} has ended")
    proposal.status = ProposalStatus.APPROVED if approve else ProposalStatus.REJECTED
    proposal.decided_by, proposal.decided_at, proposal.comment = actor, timezone.now(), comment
    proposal.save(update_fields=["status", "decided_by", "decided_at", "comment"])
    _audit(proposal, proposal.status, actor=actor, content=comment)
    return proposal


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
    """Record how it went (texts masked); committed at once, whatever becomes of the iteration."""
    with transaction.atomic():
        proposal = ActionProposal.objects.select_for_update().get(id=proposal_id)
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


def _audit(proposal: ActionProposal, transition: str, *, actor: str | None, content: str,
           outcome: str | None = None) -> None:
    """The session's timeline entry of a transition (a session-level event: it is no iteration's output), and the
    signal integrations (Slack) follow."""
    timeline.timeline_event_create(
        session_id=proposal.session_id, event_type=TimelineEventType.ACTION, content=content,
        metadata=event_metadata(TimelineEventType.ACTION, server_name=proposal.server, tool_name=proposal.tool,
                                proposal_id=str(proposal.id), transition=str(transition), actor=actor,
                                outcome=outcome))
    action_changed.send(sender=ActionProposal, proposal=proposal, transition=str(transition))
