"""The ToolExecutor agents use: lists the execution's MCP tools and runs one call end to end.

Order for every call: event start → pooled call (bounded by the server's call
timeout and the step's deadline) → masking, before anything is stored, shown
or returned → display event → optional summarization → MCP interaction record
(so its `summarized` flag is the truth) → `tool_result` event with what the LLM
sees, under a new evidence id the analysis cites, marked `suspected_injection`
when the output reads like instructions to the model. No failure raises: unknown
tools, dead servers and timeouts become error results the controller turns into
observations. The server gets the arguments
the model wrote (with pseudonyms restored by the LLM call; an argument still holding a placeholder is refused, never
sent); what is stored and shown of them is masked, like error text.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from agents.config.registry import TarsyConfig
from agents.config.schema import MCPServerConfig
from agents.context import MCPInteractionRecord, Recorder, ResolvedAgentConfig, ToolResult
from agents.llm.types import ToolCall, ToolDefinition
from agents.privacy.pseudonyms import placeholders_in
from agents.prompts.injection import injection_signals
from agents.timeline_events import TimelineEventType, event_metadata

from .client import CallResult, MCPError
from .dry_run import dry_run_problems
from .masking import mask_tool_result
from .masking.boundary import mask_arguments, mask_text, without_nul
from .pool import MCPPool, get_pool
from .skill_tool import SkillTool

if TYPE_CHECKING:  # the summarizer pulls in the prompt builder; only its type is needed here
    from .summarizer import ResultSummarizer

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4  # the usual estimate for English/JSON text; also what the summarization thresholds assume
DISPLAY_CAP_CHARS = 64 * 1024  # timeline events render inline in the browser; the full masked result is in the trace
STORED_RESULT_CAP_CHARS = 512 * 1024  # MCPInteraction rows: tarsy-bot's proven cap keeps evidence without huge rows
ERROR_MESSAGE_CAP_CHARS = 2000  # an error message is a hint for the reader, not a payload


def truncate(text: str, limit: int, note: str) -> str:
    """Cut `text` to at most about `limit` characters, ending with a note saying what was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n\n[{note}: showing {limit} of {len(text)} characters]"


def _call_metadata(server: str, tool: str, **fields: Any) -> dict[str, Any]:
    """An `mcp_tool_call` event's metadata: the call when it starts, its outcome (merged in) when it ends."""
    return event_metadata(TimelineEventType.MCP_TOOL_CALL, server_name=server, tool_name=tool, **fields)


def coerce_arguments(raw: Any, parameters: dict[str, Any]) -> dict[str, Any]:
    """Turn an Action Input that was not a JSON object into tool arguments.

    JSON object → as is; one value (raw text, or the `{"input": …}` a bare scalar or list is parsed into) for a tool
    with exactly one parameter → that parameter; otherwise {"input": raw}.
    """
    properties = parameters.get("properties") or {}
    single = len(properties) == 1 and "input" not in properties
    if isinstance(raw, dict):
        return _one_argument(properties, raw["input"]) if single and set(raw) == {"input"} else raw
    text = "" if raw is None else str(raw).strip()
    if not text:
        return {}
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    return _one_argument(properties, text if parsed is None else parsed) if single else {"input": text}


def _one_argument(properties: dict[str, Any], value: Any) -> dict[str, Any]:
    """The value as the tool's only parameter; a string parameter gets text (`42` → "42")."""
    (name, schema), = properties.items()
    wants_string = isinstance(schema, dict) and schema.get("type") == "string"
    return {name: json.dumps(value) if wants_string and not isinstance(value, str) else value}


class MCPToolExecutor:
    """ToolExecutor over the process's MCP pool for one execution (servers, tool filter, recorder, deadline)."""

    def __init__(self, *, config: TarsyConfig, resolved: ResolvedAgentConfig, recorder: Recorder,
                 pool: MCPPool | None = None, summarizer: ResultSummarizer | None = None,
                 deadline: float | None = None, actions: bool = False) -> None:
        """`actions`: an action agent's executor, which lists its servers' action tools (to propose them)."""
        self._config = config
        self._actions = actions
        self._resolved = resolved
        self._recorder = recorder
        self._pool = pool or get_pool()
        self._summarizer = summarizer
        self._deadline = deadline
        self._warned: set[str] = set()
        self._server_errors: dict[str, str] = {}
        self._listed: list[ToolDefinition] | None = None
        self._untrusted_dry_runs: dict[str, str] = {}  # `server.tool` → why its configured dry run is not used
        self._skills = SkillTool(resolved.loadable_skills, recorder) if resolved.loadable_skills else None

    # ---- listing ----------------------------------------------------------------------------------

    def list_tools(self) -> list[ToolDefinition]:
        """Tools of the execution's servers, listed once per executor (one executor serves one step)."""
        if self._listed is None:
            tools: list[ToolDefinition] = []
            for server in self._resolved.mcp_servers:
                tools.extend(self._server_tools(server))
            if self._skills is not None:
                tools.append(self._skills.definition)
            self._listed = tools
        return list(self._listed)

    def _server_tools(self, server: str) -> list[ToolDefinition]:
        cfg = self._config.mcp_servers.get(server)
        if cfg is None:
            self._warn_once(server, f"MCP server {server!r} is not configured; its tools are unavailable")
            return []
        try:
            tools = self._pool.list_tools(server, cfg, timeout=self._budget(cfg.transport.timeout + cfg.call_timeout))
        except MCPError as exc:
            self._server_errors[server] = exc.message
            self._warn_once(server, f"MCP server {server!r} is unavailable, continuing without its tools: "
                                    f"{exc.message}")
            return []
        self._server_errors.pop(server, None)
        if self._actions:
            for tool, problem in dry_run_problems(server, cfg, tools).items():
                logger.warning("MCP server %r: %s", server, problem)
                self._untrusted_dry_runs[f"{server}.{tool}"] = problem
        return [t for t in tools if self._allowed(server, t.name)
                and (self._actions or not cfg.is_action_tool(t.name.split(".", 1)[1]))]

    def _allowed(self, server: str, canonical: str) -> bool:
        allowed = self._resolved.tool_filter.get(server)
        if not allowed:
            return True
        bare = canonical.split(".", 1)[1]
        return bare in allowed or canonical in allowed

    def _warn_once(self, server: str, message: str) -> None:
        logger.warning(message)
        if server not in self._warned:
            self._warned.add(server)
            self._recorder.add_event(TimelineEventType.ERROR, message, metadata=event_metadata(
                TimelineEventType.ERROR, server_name=server, source="mcp"))

    def _budget(self, wanted: float) -> float:
        if self._deadline is None:
            return wanted
        return min(wanted, self._deadline - time.time())

    # ---- execution --------------------------------------------------------------------------------

    def execute(self, call: ToolCall) -> ToolResult:
        if self._skills is not None and call.name == self._skills.definition.name:
            return self._skills.execute(call, coerce_arguments(call.arguments, self._skills.definition.parameters))
        server, _, tool = call.name.partition(".")
        cfg = self._config.mcp_servers.get(server)
        available = self.list_tools()
        names = [t.name for t in available]
        if cfg is None or server not in self._resolved.mcp_servers:
            return self._rejected(call, server, tool, f"Unknown MCP server {server!r} in tool name {call.name!r}.",
                                  names)
        if server in self._server_errors:
            return self._rejected(call, server, tool, f"MCP server {server!r} is unavailable: "
                                                      f"{self._server_errors[server]}", names)
        definition = next((t for t in available if t.name == call.name), None)
        if definition is None:
            return self._rejected(call, server, tool, f"Unknown tool {call.name!r}.", names)
        if cfg.is_action_tool(tool):  # an action agent proposes it (tarsy.pipeline.actions); nobody runs it here
            return self._rejected(call, server, tool, f"{call.name!r} is an action tool: it runs only once a person "
                                                      "approves a proposal of it.", names, error_kind="action_tool")
        arguments = coerce_arguments(call.arguments, definition.parameters)
        return self._run(call, server, tool, cfg, arguments, names)

    def run_approved(self, call: ToolCall) -> ToolResult:
        """Run an action tool a person approved, through the same path as every call (masked, recorded, bounded by
        the server's call timeout)."""
        server, _, tool = call.name.partition(".")
        cfg = self._config.mcp_servers.get(server)
        if cfg is None or server not in self._resolved.mcp_servers or not cfg.is_action_tool(tool):
            return self._rejected(call, server, tool, f"{call.name!r} is no action tool of this agent.", [])
        arguments = call.arguments if isinstance(call.arguments, dict) else {}
        return self._run(call, server, tool, cfg, arguments, [t.name for t in self.list_tools()])

    def run_dry_run(self, call: ToolCall) -> ToolResult | None:
        """Run a proposed action tool once as its server's dry run (`dry_run` in the server's config: the argument
        that makes the server change nothing), through the same path as every call; None when it has none, or when
        the tool's listed schema does not declare that argument (agents.mcp.dry_run: said on the timeline)."""
        server, _, tool = call.name.partition(".")
        cfg = self._config.mcp_servers.get(server)
        how = cfg.dry_run_of(tool) if cfg is not None and server in self._resolved.mcp_servers else None
        if cfg is None or how is None or call.name not in {t.name for t in self.list_tools()}:
            return None
        if call.name in self._untrusted_dry_runs:  # never a real call in place of a dry run
            self._recorder.add_event(TimelineEventType.ERROR, self._untrusted_dry_runs[call.name],
                                     metadata=event_metadata(TimelineEventType.ERROR, server_name=server,
                                                             tool_name=tool, source="dry_run"))
            return None
        arguments = {**(call.arguments if isinstance(call.arguments, dict) else {}), how.argument: how.value}
        return self._run(call, server, tool, cfg, arguments, [t.name for t in self.list_tools()])

    def _rejected(self, call: ToolCall, server: str, tool: str, problem: str, names: list[str],
                  error_kind: str = "unknown_tool") -> ToolResult:
        listing = "\n".join(f"- {n}" for n in names) or "(none: no MCP tools are available to this agent)"
        content = f"Error: {problem} Available tools:\n{listing}"
        arguments = call.arguments if isinstance(call.arguments, dict) else {"input": str(call.arguments)}
        event_id = self._recorder.start_event(TimelineEventType.MCP_TOOL_CALL, metadata=_call_metadata(
            server, tool, arguments=mask_arguments(arguments)))
        self._recorder.complete_event(event_id, content=content, status="failed", metadata=_call_metadata(
            server, tool, is_error=True, duration_ms=0, error_kind=error_kind))
        return self._finish(call, server, tool, content, is_error=True, summarized=False)

    def _run(self, call: ToolCall, server: str, tool: str, cfg: MCPServerConfig, arguments: dict[str, Any],
             names: list[str]) -> ToolResult:
        invented = placeholders_in(arguments)
        if invented:  # restored already where the model was given them: these stand for nothing it was given
            return self._rejected(call, server, tool, f"the arguments hold {', '.join(invented)}, which stand for no "
                                  "name you were given, so the call was not made. Use only the placeholders that "
                                  "appear in your input.", names, error_kind="unknown_placeholder")
        shown_arguments = mask_arguments(arguments)
        event_id = self._recorder.start_event(TimelineEventType.MCP_TOOL_CALL,
                                              metadata=_call_metadata(server, tool, arguments=shown_arguments))
        timeout = self._budget(cfg.call_timeout)
        started = time.monotonic()
        try:
            if timeout <= 0:
                raise MCPError(server, "not called: the step's time budget is exhausted", "timeout")
            result = self._pool.call_tool(server, cfg, tool, arguments, timeout=timeout)
        except MCPError as exc:
            duration_ms = int((time.monotonic() - started) * 1000)
            return self._failed(call, server, tool, cfg, shown_arguments, names, event_id, exc, duration_ms)
        masked = mask_tool_result(without_nul(result.text), cfg.data_masking)
        self._recorder.complete_event(
            event_id, content=truncate(masked, DISPLAY_CAP_CHARS, "Result truncated for display"),
            metadata=_call_metadata(server, tool, is_error=result.is_error, duration_ms=result.duration_ms,
                                    raw_size=result.raw_size),
        )
        content, summarized = self._for_llm(server, tool, cfg, masked, result)
        self._recorder.record_mcp_interaction(MCPInteractionRecord(
            server=server, tool=tool, arguments=shown_arguments,
            result=truncate(masked, STORED_RESULT_CAP_CHARS, "Result truncated for storage"),
            raw_size=result.raw_size, summarized=summarized, duration_ms=result.duration_ms,
            success=not result.is_error, error_message=masked[:ERROR_MESSAGE_CAP_CHARS] if result.is_error else "",
            available_tools=names,
        ))
        return self._finish(call, server, tool, content, is_error=result.is_error, summarized=summarized,
                            output=masked)

    def _failed(self, call: ToolCall, server: str, tool: str, cfg: MCPServerConfig, arguments: Any,
                names: list[str], event_id: int, exc: MCPError, duration_ms: int) -> ToolResult:
        """`arguments`: as stored (masked)."""
        message = mask_tool_result(exc.message, cfg.data_masking)[:ERROR_MESSAGE_CAP_CHARS]
        content = f"Error: tool {server}.{tool} failed ({exc.kind}): {message}"
        self._recorder.record_mcp_interaction(MCPInteractionRecord(
            server=server, tool=tool, arguments=arguments, result="", duration_ms=duration_ms, success=False,
            error_message=message, available_tools=names,
        ))
        self._recorder.complete_event(event_id, content=content, status="failed", metadata=_call_metadata(
            server, tool, is_error=True, duration_ms=duration_ms, error_kind=exc.kind))
        return self._finish(call, server, tool, content, is_error=True, summarized=False)

    def _for_llm(self, server: str, tool: str, cfg: MCPServerConfig, masked: str,
                 result: CallResult) -> tuple[str, bool]:
        """The text the LLM sees: a summary when the result is too big (and summarization works), else capped."""
        cap = self._resolved.llm_provider.max_tool_result_tokens * CHARS_PER_TOKEN
        settings = cfg.summarization
        tokens = len(masked) // CHARS_PER_TOKEN
        if result.is_error or not settings.enabled or self._summarizer is None \
                or tokens <= settings.size_threshold_tokens:
            return truncate(masked, cap, "Tool result truncated"), False
        try:
            summary = self._summarizer.summarize(server, tool, masked, settings.summary_max_token_limit)
        except Exception as exc:  # noqa: BLE001 - any summarizer failure falls back to truncation, recorded below
            self._recorder.add_event(
                TimelineEventType.ERROR,
                f"Summarizing the result of {server}.{tool} (~{tokens} tokens) failed: {mask_text(str(exc))}; "
                f"the result was truncated to {cap // CHARS_PER_TOKEN} tokens instead",
                metadata=event_metadata(TimelineEventType.ERROR, server_name=server, tool_name=tool,
                                        source="summarization"),
            )
            return truncate(masked, cap, "Tool result truncated because summarization failed"), False
        self._recorder.add_event(TimelineEventType.MCP_TOOL_SUMMARY, summary, metadata=event_metadata(
            TimelineEventType.MCP_TOOL_SUMMARY, server_name=server, tool_name=tool, original_tokens=tokens))
        note = (f"[Note: the result of {server}.{tool} was about {tokens} tokens, over the "
                f"{settings.size_threshold_tokens}-token limit, so it was summarized.]")
        return f"{note}\n{summary}", True

    def _finish(self, call: ToolCall, server: str, tool: str, content: str, *, is_error: bool,
                summarized: bool, output: str | None = None) -> ToolResult:
        """`output`: the whole masked output when `content` is a summary or a cut of it (what is checked for
        instruction-shaped text: a summary may drop the words but not the intent)."""
        evidence = self._recorder.evidence_id()
        signals = injection_signals(content if output is None else output)
        if signals:
            logger.warning("%s.%s returned instruction-shaped text (%s); flagged as a suspected injection",
                           server, tool, ", ".join(signals))
        self._recorder.add_event(
            TimelineEventType.TOOL_RESULT, truncate(content, DISPLAY_CAP_CHARS, "Result truncated for display"),
            metadata=event_metadata(TimelineEventType.TOOL_RESULT, server_name=server, tool_name=tool,
                                    is_error=is_error, summarized=summarized, tool_call_id=call.id,
                                    evidence_id=evidence, suspected_injection=bool(signals) or None),
        )
        return ToolResult(call=call, content=content, is_error=is_error, summarized=summarized, evidence_id=evidence,
                          suspected_injection=bool(signals))
