"""Native thinking: tools bound as functions; thinking and text streamed; tool results as `tool` messages."""

from __future__ import annotations

import json

from agents.context import ExecutionContext
from agents.llm.types import CodeExecutionChunk, ConversationMessage, LLMResponse, ToolDefinition
from agents.mcp.masking.boundary import mask_arguments
from agents.prompts.builder import build_native_messages, tool_response
from agents.timeline_events import TimelineEventType, event_metadata

from .base import StepOutcome, StepStatus
from .common import IterationController, complete, stopped_outcome
from .llm_call import LLMCallResult


def code_runs(chunks: list[CodeExecutionChunk]) -> list[CodeExecutionChunk]:
    """Gemini streams the code and its result as separate parts: pair each result with the code before it."""
    runs: list[CodeExecutionChunk] = []
    for chunk in chunks:
        if runs and not chunk.code and not runs[-1].result and not runs[-1].outcome:
            runs[-1] = runs[-1].model_copy(update={"result": chunk.result, "outcome": chunk.outcome})
        else:
            runs.append(chunk)
    return runs


def _code_content(run: CodeExecutionChunk) -> str:
    parts = [f"```python\n{run.code.strip()}\n```"] if run.code.strip() else []
    if run.result.strip():
        parts.append(f"Output:\n```\n{run.result.strip()}\n```")
    return "\n\n".join(parts)


def record_native_tool_results(ctx: ExecutionContext, response: LLMResponse) -> None:
    """Gemini's server-side tools (code execution, search, url context) get their own timeline events."""
    for run in code_runs(response.code_executions):
        ctx.recorder.add_event(TimelineEventType.CODE_EXECUTION, _code_content(run), event_metadata(
            TimelineEventType.CODE_EXECUTION, code=run.code, result=run.result, outcome=run.outcome))
    for grounding in response.groundings:
        event_type = TimelineEventType.GOOGLE_SEARCH_RESULT if grounding.kind == "google_search" \
            else TimelineEventType.URL_CONTEXT_RESULT
        lines = [f"Searched: {', '.join(grounding.queries)}"] if grounding.queries else []
        lines += [f"- [{s.title or s.uri}]({s.uri})" for s in grounding.sources]
        ctx.recorder.add_event(event_type, "\n".join(lines), event_metadata(
            event_type, queries=grounding.queries, sources=[s.model_dump() for s in grounding.sources]))


def finish_with_reply(ctx: ExecutionContext, result: LLMCallResult) -> StepOutcome:
    """A reply without tool calls is the final analysis (the streamed `llm_response` event becomes it)."""
    response = result.response
    record_native_tool_results(ctx, response)
    ctx.recorder.add_messages([response.as_assistant_message()])
    return complete(ctx, response.text.strip(), result.text_event_id)


class NativeThinkingController(IterationController):
    """One iteration: call with tools bound; run every tool call, or conclude when there is none."""

    strategy = "native-thinking"

    def initial_messages(self, ctx: ExecutionContext) -> list[ConversationMessage]:
        return build_native_messages(
            config=ctx.config, tools=ctx.tools.list_tools(), alert_type=ctx.alert_type, alert_data=ctx.alert_data,
            runbook=ctx.runbook, previous_stage_context=ctx.previous_stage_context, chat=ctx.chat,
            memories=ctx.memories, task=ctx.task,
        )

    def bound_tools(self, ctx: ExecutionContext) -> list[ToolDefinition]:
        return ctx.tools.list_tools()

    def handle(self, ctx: ExecutionContext, result: LLMCallResult) -> StepOutcome:
        response = result.response
        if not response.tool_calls:
            return finish_with_reply(ctx, result)
        if result.text_event_id is not None:  # text alongside tool calls stays an llm_response
            ctx.recorder.complete_event(result.text_event_id, response.text)
        record_native_tool_results(ctx, response)
        ctx.recorder.add_messages([response.as_assistant_message()])
        for call in response.tool_calls:
            if reason := ctx.liveness.stop_reason():
                return stopped_outcome(reason)
            server, _, tool = call.name.partition(".")
            shown = mask_arguments(call.arguments)  # the tool gets what the model wrote; the timeline, masked text
            ctx.recorder.add_event(TimelineEventType.LLM_TOOL_CALL, json.dumps(shown, ensure_ascii=False, indent=2),
                                   event_metadata(TimelineEventType.LLM_TOOL_CALL, server_name=server, tool_name=tool,
                                                  arguments=shown, tool_call_id=call.id, source="native",
                                                  fallback_provider=ctx.fallback_provider))
            tool_result = ctx.tools.execute(call)
            ctx.recorder.add_messages([ConversationMessage(role="tool", content=tool_response(tool_result),
                                                           tool_call_id=call.id, tool_name=call.name)])
        return StepOutcome(StepStatus.CONTINUE)

    def conclude(self, ctx: ExecutionContext, result: LLMCallResult) -> StepOutcome:
        return finish_with_reply(ctx, result)
