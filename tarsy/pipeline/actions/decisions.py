"""What follows an action agent's iteration (its proposals created; it parks while one waits for a person), a
person's decision (the API, Slack, the evals) and the sweeper's expiry of an undecided proposal: each decision
wakes the parked execution once."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.mcp.masking.boundary import mask_text
from tarsy.config import get_config
from tarsy.decisions import EndExecution, RunIteration
from tarsy.errors import Forbidden
from tarsy.models import ActionProposal, AgentExecution, ExecStatus
from tarsy.services import actions, executions

from ..iteration_calls import IterationCalls
from ..parked import wake_parked
from .guards import target_of
from .report import actions_section

# ---- after an action agent's iteration --------------------------------------------------------------------------


def proposals_apply(execution_id: Any, iteration: int, calls: IterationCalls) -> None:
    """In the transaction completing the iteration: create its proposals."""
    if not calls.proposals:
        return
    execution = AgentExecution.objects.get(id=execution_id)
    ttl = get_config().actions.approval_ttl
    for p in calls.proposals:
        actions.action_proposal_create(
            execution=execution, iteration=iteration, server=p.server, tool=p.tool,
            target=target_of(p.server, p.tool, p.arguments), arguments=p.arguments,
            justification=p.justification, expected_effect=p.expected_effect, verify_tool=p.verify_tool,
            verify_arguments=p.verify_arguments, verify_expect=p.verify_expect, ttl_s=ttl, dry_run=p.dry_run,
            dry_run_status=p.dry_run_status)


def action_next(execution_id: Any, iteration: int,
                decision: RunIteration | EndExecution) -> RunIteration | EndExecution | None:
    """After an action agent's iteration (its proposals created): None to park it while a proposal waits for a
    person; at once on when a decision arrived meanwhile; a conclusion carries the session's actions."""
    concluded = isinstance(decision, EndExecution) and decision.status == ExecStatus.COMPLETED
    if not concluded and not isinstance(decision, RunIteration):
        return decision
    if actions.actions_undelivered(execution_id=execution_id):
        timeout = decision.timeout if isinstance(decision, RunIteration) else 0.0
        return RunIteration(str(execution_id), iteration + 1, timeout)
    if actions.actions_waiting(execution_id=execution_id):
        executions.execution_park(execution_id=execution_id)
        return None
    if isinstance(decision, EndExecution):
        return EndExecution(decision.execution_id, decision.status, error=decision.error,
                            final_analysis=_with_actions(decision.final_analysis, execution_id))
    return decision


def _with_actions(analysis: str, execution_id: Any) -> str:
    section = actions_section(actions.actions_of_execution(execution_id=execution_id))
    return f"{analysis}\n\n{section}" if section else analysis


# ---- a person's decision, and the sweeper's expiry ---------------------------------------------------------------


def may_decide(identity: str, groups: set[str]) -> bool:
    approvers = set(get_config().actions.approvers)
    return bool(identity) and (identity in approvers or bool(groups & approvers))


def action_decide(*, proposal_id: Any, approve: bool, identity: str, groups: set[str],
                  comment: str) -> ActionProposal:
    """A person's approval or rejection (refused unless they are an approver); wakes the execution once."""
    if not may_decide(identity, groups):
        raise Forbidden("only the configured approvers (actions.approvers) may decide actions")
    with transaction.atomic():
        proposal = actions.action_decide(proposal_id=proposal_id, approve=approve, actor=identity,
                                         comment=mask_text(comment))
        wake_parked(proposal.execution_id)
    return proposal


def expired_wake() -> int:
    """The sweeper's: pending proposals past their time expire, and their executions wake to hear it."""
    count = 0
    for proposal_id in actions.actions_expired(now=timezone.now()):
        with transaction.atomic():
            proposal = actions.action_expire(proposal_id=proposal_id)
            if proposal is not None:
                wake_parked(proposal.execution_id)
                count += 1
    return count
