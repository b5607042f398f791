"""ReAct: tools described in the prompt, the reply parsed from text, observations as user messages."""

from __future__ import annotations

import json

from agents.context import ExecutionContext
from agents.llm.types import ConversationMessage, ToolCall
from agents.prompts.builder import build_react_messages, forced_conclusion_prompt, format_observation

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
from .react_parser import parse_react


def _initial(ctx: ExecutionContext) -> list[ConversationMessage]:
    return build_react_messages(
        config=ctx.config, tools=ctx.tools.list_tools(), alert_type=ctx.alert_type, alert_data=ctx.alert_data,
        runbook=ctx.runbook, previous_stage_context=ctx.previous_stage_context, chat=ctx.chat,
    )


class ReActController:
    """One ReAct iteration: call, parse, then act (tool + observation), conclude, or send format feedback."""

    def step(self, ctx: ExecutionContext) -> StepOutcome:
        messages = conversation(ctx, _initial)
        if needs_forced_conclusion(ctx):
            return self._force_conclusion(ctx, messages)
        tools = ctx.tools.list_tools()
        # The raw reply streams into the thinking event; once parsed, the event keeps only the thought.
        result = call_llm(ctx, messages, interaction_type=interaction_type(ctx), text_event_type="llm_thinking",
                          thinking_source="react")
        text_event = result.text_event_id
        failed = failure_outcome(ctx, result)
        if failed:
            if text_event is not None:
                ctx.recorder.complete_event(text_event, result.response.text, status="failed")
            return failed
        text = result.response.text
        parsed = parse_react(text, tools)
        if text_event is not None:
            ctx.recorder.complete_event(text_event, parsed.thought, metadata={"source": "react"})
        elif parsed.thought:
            ctx.recorder.add_event("llm_thinking", parsed.thought, {"source": "react"})
        ctx.recorder.add_messages([ConversationMessage(role="assistant", content=text)])
        if parsed.kind == "final_answer":
            return complete(ctx, parsed.final_answer, None)
        if parsed.kind != "action":
            ctx.recorder.add_messages([ConversationMessage(role="user", content=parsed.feedback)])
            return StepOutcome(StepStatus.CONTINUE)
        return self._act(ctx, parsed.action, parsed.action_input)

    def _act(self, ctx: ExecutionContext, action: str, action_input) -> StepOutcome:
        server, _, tool = action.partition(".")
        shown = json.dumps(action_input, ensure_ascii=False, indent=2) if isinstance(action_input, dict) \
            else str(action_input)
        ctx.recorder.add_event("llm_tool_call", shown, {"tool_name": action, "server_name": server, "tool": tool,
                                                        "arguments": action_input, "source": "react"})
        if ctx.recorder.stop_reason():
            return stopped_outcome(ctx.recorder.stop_reason())
        call = ToolCall(id=f"react-{ctx.state.iteration}", name=action, arguments=action_input)
        tool_result = ctx.tools.execute(call)
        ctx.recorder.add_messages([ConversationMessage(role="user", content=format_observation(tool_result))])
        return StepOutcome(StepStatus.CONTINUE)

    def _force_conclusion(self, ctx: ExecutionContext, messages: list[ConversationMessage]) -> StepOutcome:
        if ctx.state.last_interaction_failed:
            return max_iterations_failure(ctx)
        prompt = ConversationMessage(role="user", content=forced_conclusion_prompt("react"))
        ctx.recorder.add_messages([prompt])
        result = call_llm(ctx, [*messages, prompt], interaction_type="forced_conclusion",
                          text_event_type="llm_thinking", thinking_source="react")
        failed = failure_outcome(ctx, result)
        if failed:
            if result.text_event_id is not None:
                ctx.recorder.complete_event(result.text_event_id, result.response.text, status="failed")
            return StepOutcome(StepStatus.FAILED, error=f"Forced conclusion failed: {failed.error}")
        text = result.response.text
        parsed = parse_react(text, [])
        answer = parsed.final_answer if parsed.kind == "final_answer" else text.strip()
        if result.text_event_id is not None:
            ctx.recorder.complete_event(result.text_event_id, parsed.thought, metadata={"source": "react"})
        ctx.recorder.add_messages([ConversationMessage(role="assistant", content=text)])
        return complete(ctx, answer, None)
