"""Native thinking: tools bound as functions; thinking and text streamed; tool results as `tool` messages."""

from __future__ import annotations

import json

from agents.context import ExecutionContext
from agents.llm.types import ConversationMessage, LLMResponse
from agents.prompts.builder import build_native_messages, forced_conclusion_prompt

from .base import StepOutcome, StepStatus
from .common import (
    complete,
    conversation,
    failure_outcome,
    interaction_type,
    max_iterations_failure,
    needs_forced_conclusion,
    stopped_outcome,
)
from .llm_call import call_llm


def _initial(ctx: ExecutionContext) -> list[ConversationMessage]:
    return build_native_messages(
        config=ctx.config, tools=ctx.tools.list_tools(), alert_type=ctx.alert_type, alert_data=ctx.alert_data,
        runbook=ctx.runbook, previous_stage_context=ctx.previous_stage_context, chat=ctx.chat,
    )


def record_native_tool_results(ctx: ExecutionContext, response: LLMResponse) -> None:
    """Gemini's server-side tools (code execution, search, url context) get their own timeline events."""
    for code in response.code_executions:
        ctx.recorder.add_event("code_execution", f"```python\n{code.code}\n```\n\n{code.result}".strip(),
                               {"outcome": code.outcome})
    for grounding in response.groundings:
        event_type = "google_search_result" if grounding.kind == "google_search" else "url_context_result"
        lines = [f"- [{s.title or s.uri}]({s.uri})" for s in grounding.sources]
        ctx.recorder.add_event(event_type, "\n".join(lines),
                               {"queries": grounding.queries, "sources": [s.model_dump() for s in grounding.sources]})


class NativeThinkingController:
    """One iteration: call with tools bound; run every tool call, or conclude when there is none."""

    def step(self, ctx: ExecutionContext) -> StepOutcome:
        messages = conversation(ctx, _initial)
        if needs_forced_conclusion(ctx):
            return self._force_conclusion(ctx, messages)
        result = call_llm(ctx, messages, interaction_type=interaction_type(ctx), tools=ctx.tools.list_tools(),
                          text_event_type="llm_response", thinking_source="native")
        failed = failure_outcome(ctx, result)
        if failed:
            if result.text_event_id is not None:
                ctx.recorder.complete_event(result.text_event_id, result.response.text, status="failed")
            return failed
        response = result.response
        record_native_tool_results(ctx, response)
        if not response.tool_calls:
            ctx.recorder.add_messages([response.as_assistant_message()])
            return complete(ctx, response.text.strip(), result.text_event_id)
        if result.text_event_id is not None:
            ctx.recorder.complete_event(result.text_event_id, response.text)
        ctx.recorder.add_messages([response.as_assistant_message()])
        for call in response.tool_calls:
            if ctx.recorder.stop_reason():
                return stopped_outcome(ctx.recorder.stop_reason())
            server, _, tool = call.name.partition(".")
            ctx.recorder.add_event("llm_tool_call", json.dumps(call.arguments, ensure_ascii=False, indent=2),
                                   {"tool_name": call.name, "server_name": server, "tool": tool,
                                    "arguments": call.arguments, "tool_call_id": call.id, "source": "native"})
            tool_result = ctx.tools.execute(call)
            ctx.recorder.add_messages([ConversationMessage(role="tool", content=tool_result.content,
                                                           tool_call_id=call.id, tool_name=call.name)])
        return StepOutcome(StepStatus.CONTINUE)

    def _force_conclusion(self, ctx: ExecutionContext, messages: list[ConversationMessage]) -> StepOutcome:
        if ctx.state.last_interaction_failed:
            return max_iterations_failure(ctx)
        prompt = ConversationMessage(role="user", content=forced_conclusion_prompt("native-thinking"))
        ctx.recorder.add_messages([prompt])
        result = call_llm(ctx, [*messages, prompt], interaction_type="forced_conclusion",
                          text_event_type="llm_response", thinking_source="native")
        failed = failure_outcome(ctx, result)
        if failed:
            if result.text_event_id is not None:
                ctx.recorder.complete_event(result.text_event_id, result.response.text, status="failed")
            return StepOutcome(StepStatus.FAILED, error=f"Forced conclusion failed: {failed.error}")
        ctx.recorder.add_messages([result.response.as_assistant_message()])
        return complete(ctx, result.response.text.strip(), result.text_event_id)
