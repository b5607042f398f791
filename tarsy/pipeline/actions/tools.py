"""An action agent's tools: its servers' allow-listed action tools are proposed, never run. `ActionTools` checks a
call (its justification, expected effect and verification read; the guards; the pending limit), runs the server's
dry run where it has one, and collects the proposal in the iteration's `IterationCalls`; the proposal is created
when the iteration completes (tarsy.pipeline.actions.decisions)."""

from __future__ import annotations

import uuid
from typing import Any, Protocol

from agents.context import Recorder, ToolExecutor, ToolResult
from agents.llm.types import ToolCall, ToolDefinition
from agents.mcp.local_call import record_local_call
from agents.mcp.masking.boundary import mask_arguments, mask_text
from tarsy.config import get_config
from tarsy.models import AgentExecution, DryRunStatus
from tarsy.services import actions

from ..iteration_calls import IterationCalls, Proposal, Refused
from .guards import proposal_check

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
