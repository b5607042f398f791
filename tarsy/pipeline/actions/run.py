"""An approved action runs, once, and is verified; the woken iteration is told every decision on its proposals
and how each went, before its step (keyed by iteration, like the sub-agents' results)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from agents.context import Recorder, ResolvedAgentConfig
from agents.llm.types import ConversationMessage, ToolCall
from agents.prompts.fence import untrusted
from tarsy.config import get_config
from tarsy.models import ActionOutcome, ActionProposal, AgentExecution, ProposalStatus
from tarsy.services import actions


def decisions_inject(execution: AgentExecution, iteration: int, recorder: Recorder, resolved: ResolvedAgentConfig,
                     deadline: float) -> None:
    """Tell the iteration the decisions on its proposals; an approved one runs (once) and is verified first, through
    the MCP executor of the iteration (masked, recorded, bounded by the server's call timeout and the deadline)."""
    from agents.mcp.executor import MCPToolExecutor  # the web process decides, it never loads the MCP client

    tools = MCPToolExecutor(config=get_config(), resolved=resolved, recorder=recorder, deadline=deadline,
                            actions=True)
    for proposal in actions.actions_decided_take(execution_id=execution.id, iteration=iteration):
        evidence: list[str] = []
        if proposal.status == ProposalStatus.APPROVED and actions.action_claim(proposal_id=proposal.id):
            proposal = _run(proposal, tools, deadline, evidence)
        elif proposal.status == ProposalStatus.APPROVED:  # not claimed: withdrawn meanwhile (the alert resolved)
            proposal = actions.action_get(proposal_id=proposal.id)
        if proposal.status == ProposalStatus.EXECUTING:
            proposal = actions.action_executed(  # claimed by an attempt that died: it may or may not have run
                proposal_id=proposal.id, outcome=ActionOutcome.FAILED, evidence="", result=actions.INTERRUPTED)
        recorder.add_messages([ConversationMessage(role="user", content=_news(proposal, evidence))])


def _run(proposal: ActionProposal, tools: Any, deadline: float, evidence: list[str]) -> ActionProposal:
    ran = tools.run_approved(ToolCall(id=f"action-{uuid.uuid4().hex[:8]}", name=f"{proposal.server}.{proposal.tool}",
                                      arguments=proposal.arguments))
    evidence.append(ran.evidence_id)
    if ran.is_error:
        return actions.action_executed(proposal_id=proposal.id, outcome=ActionOutcome.FAILED, result=ran.content,
                                       evidence="")
    settings = get_config().actions
    read = None
    for attempt in range(settings.verify_attempts):
        if attempt:
            if time.time() + settings.verify_interval >= deadline:
                break
            time.sleep(settings.verify_interval)
        read = tools.execute(ToolCall(id=f"verify-{uuid.uuid4().hex[:8]}", name=proposal.verify_tool,
                                      arguments=proposal.verify_arguments))
        evidence.append(read.evidence_id)
        if not read.is_error and proposal.verify_expect in read.content:
            return actions.action_executed(proposal_id=proposal.id, outcome=ActionOutcome.VERIFIED,
                                           result=ran.content, evidence=read.content)
    return actions.action_executed(proposal_id=proposal.id, outcome=ActionOutcome.NOT_VERIFIED, result=ran.content,
                                   evidence=read.content if read is not None else "")


def _news(p: ActionProposal, evidence: list[str]) -> str:
    """What the agent reads of a decision and, once it ran, of the outcome (masked texts)."""
    head = f"Action {p.id} ({p.server}.{p.tool} {json.dumps(p.arguments)})"
    said = f' ("{p.comment}")' if p.comment else ""
    cite = f" (evidence {', '.join(e for e in evidence if e)})" if any(evidence) else ""
    if p.status == ProposalStatus.REJECTED:
        return f"{head} was REJECTED by {p.decided_by}{said}. It did not run. Conclude without acting."
    if p.status == ProposalStatus.EXPIRED:
        return f"{head} EXPIRED: nobody decided in time. It did not run. Conclude without acting."
    if p.status == ProposalStatus.WITHDRAWN:
        return f"{head} was WITHDRAWN: {p.reason}. It did not run. Conclude without acting."
    ran = f"{head} was approved by {p.decided_by}{said}"
    if p.outcome == ActionOutcome.VERIFIED:
        return (f"{ran} and ran{cite}. Outcome: verified: {p.verify_tool} shows {p.verify_expect!r}.\n\n"
                f"{_output(p.result, 'the output of the action')}")
    if p.outcome == ActionOutcome.NOT_VERIFIED:
        return (f"{ran} and ran{cite}. Outcome: NOT verified: {p.verify_tool} does not show {p.verify_expect!r}."
                f"\n\n{_output(p.evidence, f'the last read of {p.verify_tool}')}\n\n"
                f"{_output(p.result, 'the output of the action')}\n\n"
                "Propose a follow-up (a rollback or the next step) with its evidence, or conclude.")
    return f"{ran} but FAILED{cite}.\n\n{_output(p.result, 'the error output of the action')}"


def _output(text: str, what: str) -> str:
    """An action's output or a verification read: tool output, fenced and checked like any (agents.prompts.fence)."""
    return untrusted(text or "(empty)", what=what).text
