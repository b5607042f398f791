"""Approved actions: an action agent proposes, a person decides, the execution runs and verifies
(docs/investigations.md, "Approved actions").

An action agent (`type: action`) sees its servers' allow-listed action tools with three more arguments:
`_justification` (why, citing evidence), `_expected_effect` and `_verify` ({"tool": "server.read_tool",
"arguments": {…}, "expect": "text the read shows once it worked"}). Calling one runs nothing: `ActionTools` checks
the call and the proposal is created when the iteration completes (in its transaction, like a dispatch), and the
execution parks (`waiting`, no task) with the sub-agents' park and wake. A decision (approve, reject; or the
sweeper's expiry) wakes it once; its next iteration first runs an approved tool through the normal MCP path,
claimed before it runs so that no retry runs it twice, then re-reads the state until the expected text shows
(bounded) and records `verified`, `not_verified` or `failed`. The agent is told as a message, and may propose a
follow-up (a rollback) that again needs approval. What may not be proposed at all (a resolved alert, the rate limit
per target) is tarsy.pipeline.action_guards'.

A tool whose server supports a dry run (`dry_run` in the server's config, e.g. kubectl's `--dry-run=server`) runs
once as one when it is proposed, through the same MCP path (masked, recorded, bounded by the step's deadline): its
output is stored on the proposal for the approver, and a failing dry run is shown without blocking the proposal.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from django.db import transaction
from django.utils import timezone

from agents.context import Recorder, ResolvedAgentConfig, ToolExecutor, ToolResult
from agents.llm.types import ConversationMessage, ToolCall, ToolDefinition
from agents.mcp.local_call import record_local_call
from agents.mcp.masking.boundary import mask_arguments, mask_text
from agents.prompts.fence import untrusted
from tarsy.config import get_config
from tarsy.decisions import EndExecution, RunIteration
from tarsy.errors import Forbidden
from tarsy.models import ActionOutcome, ActionProposal, AgentExecution, DryRunStatus, ExecStatus, ProposalStatus
from tarsy.services import actions, executions

from .action_guards import proposal_check, target_of
from .sub_agents import IterationCalls, Refused, wake_parked

JUSTIFICATION, EXPECTED_EFFECT, VERIFY = "_justification", "_expected_effect", "_verify"
_PROPOSAL_PARAMETERS = {
    JUSTIFICATION: {"type": "string", "description": "Why this action, citing the evidence ids that show it is "
                                                     "needed"},
    EXPECTED_EFFECT: {"type": "string", "description": "What will change once it ran"},
    VERIFY: {"type": "object", "description": "A read that shows the effect: tool (server.tool, not an action "
                                              "tool), arguments, and expect (text the read shows once it worked)",
             "required": ["tool", "expect"], "properties": {
                 "tool": {"type": "string"}, "arguments": {"type": "object"}, "expect": {"type": "string"}}},
}


@dataclass
class Proposal:
    """An action tool call, checked, to be created as an ActionProposal when the iteration completes."""

    server: str
    tool: str
    arguments: dict[str, Any]
    justification: str
    expected_effect: str
    verify_tool: str
    verify_arguments: dict[str, Any]
    verify_expect: str
    dry_run: str = ""
    dry_run_status: str = DryRunStatus.UNSUPPORTED


class DryRunner(Protocol):
    def run_dry_run(self, call: ToolCall) -> ToolResult | None: ...


DRY_RUN_CAP_CHARS = 64 * 1024  # a preview for a person to read; the whole masked output is in the trace


class ActionTools:
    """An action agent's tool executor: its action tools are proposed (never run); every other call goes to `tools`."""

    def __init__(self, tools: ToolExecutor, *, execution: AgentExecution, recorder: Recorder,
                 calls: IterationCalls, dry_runs: DryRunner | None = None) -> None:
        """`dry_runs`: runs a proposed tool as its server's dry run (the MCP executor)."""
        self._tools, self._execution, self._recorder, self.calls = tools, execution, recorder, calls
        self._dry_runs = dry_runs

    def list_tools(self) -> list[ToolDefinition]:
        return [_proposable(d) if self._action(d.name) else d for d in self._tools.list_tools()]

    def execute(self, call: ToolCall) -> ToolResult:
        if not self._action(call.name):
            return self._tools.execute(call)
        server, _, tool = call.name.partition(".")
        arguments = dict(call.arguments) if isinstance(call.arguments, dict) else {}
        try:
            content, is_error = self._propose(server, tool, arguments), False
        except Refused as exc:
            content, is_error = f"Error: {exc}", True
        return record_local_call(self._recorder, call, server=server, tool=tool, arguments=arguments,
                                 content=content, is_error=is_error, available=[d.name for d in self.list_tools()])

    def _action(self, name: str) -> bool:
        server, _, tool = name.partition(".")
        cfg = get_config().mcp_servers.get(server)
        return cfg is not None and cfg.is_action_tool(tool)

    def _propose(self, server: str, tool: str, arguments: dict[str, Any]) -> str:
        settings = get_config().actions
        if not settings.enabled:
            raise Refused("actions are disabled (actions.enabled: false); report what you would do instead")
        justification = str(arguments.pop(JUSTIFICATION, "") or "").strip()
        effect = str(arguments.pop(EXPECTED_EFFECT, "") or "").strip()
        verify = arguments.pop(VERIFY, None)
        if not justification or not effect:
            raise Refused(f"{JUSTIFICATION} (with the evidence) and {EXPECTED_EFFECT} are required")
        verify_tool, verify_arguments, expect = self._verification(verify)
        if mask_arguments(arguments) != arguments:
            raise Refused("the arguments hold text that masking hides; an action must be shown exactly as it runs")
        dry = get_config().mcp_servers[server].dry_run_of(tool)
        if dry is not None and dry.argument in arguments:
            raise Refused(f"{dry.argument!r} is the dry-run argument: TARSy sets it for the preview; leave it out")
        proposal_check(session_id=self._execution.session_id, server=server, tool=tool, arguments=arguments,
                       queued=self.calls.proposals)  # guards: a resolved alert, the rate limit per target
        pending = actions.actions_pending_count(session_id=self._execution.session_id) + len(self.calls.proposals)
        if pending >= settings.max_pending_per_session:
            raise Refused(f"{pending} action(s) already wait for approval in this session "
                          f"(max_pending_per_session {settings.max_pending_per_session}); wait for the decision")
        dry_run, dry_run_status, told = self._dry_run(server, tool, arguments)
        self.calls.proposals.append(Proposal(
            server=server, tool=tool, arguments=arguments, justification=mask_text(justification),
            expected_effect=mask_text(effect), verify_tool=verify_tool, verify_arguments=verify_arguments,
            verify_expect=expect, dry_run=dry_run, dry_run_status=dry_run_status))
        return ("Proposed; it has NOT run. A person approves or rejects it; you are told the decision and, once it "
                f"ran, the verification's outcome. Wait for it: do not conclude as if it had run.\n{told}")

    def _dry_run(self, server: str, tool: str, arguments: dict[str, Any]) -> tuple[str, str, str]:
        """The server's preview of the change, for the approver (stored) and the agent (told); an error is shown,
        it does not block the proposal."""
        call = ToolCall(id=f"dry-run-{uuid.uuid4().hex[:8]}", name=f"{server}.{tool}", arguments=arguments)
        ran = self._dry_runs.run_dry_run(call) if self._dry_runs is not None else None
        if ran is None:
            return "", DryRunStatus.UNSUPPORTED, "No dry-run for this tool."
        shown = ran.content if len(ran.content) <= DRY_RUN_CAP_CHARS else \
            f"{ran.content[:DRY_RUN_CAP_CHARS]}\n[dry run truncated: the whole output is in the trace]"
        if ran.is_error:
            return shown, DryRunStatus.FAILED, f"Its dry run failed [{ran.evidence_id}]: {ran.content}"
        return shown, DryRunStatus.RAN, f"Its dry run (nothing changed) [{ran.evidence_id}]:\n{ran.content}"

    def _verification(self, verify: Any) -> tuple[str, dict[str, Any], str]:
        if not isinstance(verify, dict):
            raise Refused(f'{VERIFY} is required: {{"tool": "server.tool", "arguments": {{}}, "expect": "text"}}')
        name, expect = str(verify.get("tool") or ""), str(verify.get("expect") or "").strip()
        arguments = verify.get("arguments") or {}
        reads = [d.name for d in self._tools.list_tools() if not self._action(d.name)]
        if name not in reads:
            raise Refused(f"{VERIFY}.tool must be one of your read tools ({', '.join(reads) or 'none'}), not "
                          f"{name!r}")
        if not expect or not isinstance(arguments, dict):
            raise Refused(f"{VERIFY}.expect (text the read shows once the action worked) and an arguments object "
                          "are required")
        if mask_arguments(arguments) != arguments or mask_text(expect) != expect:
            raise Refused(f"{VERIFY} holds text that masking hides")
        return name, arguments, expect


def _proposable(definition: ToolDefinition) -> ToolDefinition:
    """The action tool as the agent sees it: the proposal's arguments added, the dry-run argument (TARSy's own, set
    only for the preview) left out."""
    server, _, tool = definition.name.partition(".")
    dry = get_config().mcp_servers[server].dry_run_of(tool)
    hidden = {dry.argument} if dry is not None else set()
    parameters = dict(definition.parameters or {"type": "object"})
    properties = {k: v for k, v in (parameters.get("properties") or {}).items() if k not in hidden}
    parameters["properties"] = {**properties, **_PROPOSAL_PARAMETERS}
    required = [r for r in (parameters.get("required") or []) if r not in hidden]
    parameters["required"] = [*required, JUSTIFICATION, EXPECTED_EFFECT, VERIFY]
    return ToolDefinition(name=definition.name, parameters=parameters, description=(
        f"ACTION (proposed for a person's approval, never run at once). {definition.description}"))


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


def actions_section(rows: list[ActionProposal]) -> str:
    """The `### Actions` list written by code, not by a model: each proposal, who decided and how it went ('' for
    none). Ends an action agent's analysis and the session's executive summary."""
    if not rows:
        return ""
    return "### Actions\n" + "\n".join(f"- {p.server}.{p.tool} {json.dumps(p.arguments)}: {_state(p)}" for p in rows)


def _state(p: ActionProposal) -> str:
    if p.status == ProposalStatus.EXECUTED:
        return f"approved by {p.decided_by}, ran, {p.outcome}"
    if p.status == ProposalStatus.REJECTED:
        return f"rejected by {p.decided_by}"
    if p.status == ProposalStatus.WITHDRAWN:
        return f"withdrawn: {p.reason}"
    return str(p.status)


# ---- a decision, and what the execution is told --------------------------------------------------------------


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
