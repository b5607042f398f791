"""Recording of a tool call answered in the worker rather than by an MCP server (`tarsy.load_skill`, the
orchestrator's `tarsy.dispatch_agent`/`list_agents`/`cancel_agent`, an action agent's proposal): the same three
records as a call through the MCP path (agents.mcp.executor), so the timeline and the trace show it alike."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agents.context import MCPInteractionRecord, Recorder, ToolResult
from agents.llm.types import ToolCall
from agents.timeline_events import TimelineEventType, event_metadata

from .masking.boundary import mask_arguments


def record_local_call(recorder: Recorder, call: ToolCall, *, server: str, tool: str, arguments: dict[str, Any],
                      content: str, is_error: bool, available: list[str], error_kind: str | None = None,
                      guidance: bool = False) -> ToolResult:
    """The call event, the MCP interaction and the result event of a call answered with `content`. `arguments`
    are the model's, masked here; a failure's text is the interaction's error, as on the MCP path."""
    shown = mask_arguments(arguments)
    meta = {"server_name": server, "tool_name": tool}
    event_id = recorder.start_event(TimelineEventType.MCP_TOOL_CALL, metadata=event_metadata(
        TimelineEventType.MCP_TOOL_CALL, **meta, arguments=shown))
    done = {"error_kind": error_kind} if error_kind else {}
    recorder.complete_event(event_id, content=content, status="failed" if is_error else "completed",
                            metadata=event_metadata(TimelineEventType.MCP_TOOL_CALL, **meta, is_error=is_error,
                                                    duration_ms=0, **done))
    recorder.record_mcp_interaction(MCPInteractionRecord(
        server=server, tool=tool, arguments=shown, result="" if is_error else content, raw_size=len(content),
        success=not is_error, error_message=content if is_error else "", available_tools=available))
    recorder.add_event(TimelineEventType.TOOL_RESULT, content, metadata=event_metadata(
        TimelineEventType.TOOL_RESULT, **meta, is_error=is_error, summarized=False, tool_call_id=call.id))
    result = ToolResult(call=call, content=content, is_error=is_error)
    return replace(result, guidance=True) if guidance else result
