"""ReAct: tools described in the prompt, the reply parsed from text, observations as user messages."""

from __future__ import annotations

import json

from agents.context import ExecutionContext
from agents.llm.types import ConversationMessage, ToolCall
from agents.mcp.masking.boundary import mask_arguments
from agents.prompts.builder import build_react_messages, format_observation
from agents.timeline_events import TimelineEventType, event_metadata

from .base import StepOutcome, StepStatus
from .common import IterationController, complete, show, stopped_outcome
from .llm_call import LLMCallResult
from .react_parser import ParsedReply, parse_react


class ReActController(IterationController):
    """One ReAct iteration: call, parse, then act (tool + observation), conclude, or send format feedback.

    The raw reply streams into an `llm_thinking` event; once parsed, that event keeps only the thought — or,
    when the reply has no thought, becomes what the reply is (tool call, final analysis or format error), so
    the timeline never shows the raw ReAct text and never an empty event.
    """

    strategy = "react"
    text_event_type = TimelineEventType.LLM_THINKING
    text_source = "react"
    native_tools = False

    def initial_messages(self, ctx: ExecutionContext) -> list[ConversationMessage]:
        return build_react_messages(
            config=ctx.config, tools=ctx.tools.list_tools(), alert_type=ctx.alert_type, alert_data=ctx.alert_data,
            runbook=ctx.runbook, previous_stage_context=ctx.previous_stage_context, chat=ctx.chat,
            memories=ctx.memories, task=ctx.task,
        )

    def handle(self, ctx: ExecutionContext, result: LLMCallResult) -> StepOutcome:
        text = result.response.text
        parsed = parse_react(text, ctx.tools.list_tools())
        pending = _show_thought(ctx, result, parsed.thought)
        ctx.recorder.add_messages([ConversationMessage(role="assistant", content=text)])
        if parsed.kind == "final_answer":
            return complete(ctx, parsed.final_answer, pending)
        if parsed.kind == "action":
            return self._act(ctx, parsed, pending)
        # Malformed reply or unknown tool: the reply stays in the conversation, the feedback follows it.
        if parsed.kind == "unknown_tool":
            problem = f"Unknown tool '{parsed.action}': the model was sent the list of available tools"
        else:
            problem = parsed.feedback.split("\n\n", 1)[0]
        show(ctx, pending, TimelineEventType.ERROR, problem,
             event_metadata(TimelineEventType.ERROR, source="react", reason=parsed.kind), status="failed")
        ctx.recorder.add_messages([ConversationMessage(role="user", content=parsed.feedback)])
        return StepOutcome(StepStatus.CONTINUE)

    def _act(self, ctx: ExecutionContext, parsed: ParsedReply, pending: int | None) -> StepOutcome:
        action, action_input = parsed.action, parsed.action_input
        server, _, tool = action.partition(".")
        masked_input = mask_arguments(action_input)  # the tool gets what the model wrote; the timeline, masked text
        shown = json.dumps(masked_input, ensure_ascii=False, indent=2) if isinstance(masked_input, dict) \
            else str(masked_input)
        show(ctx, pending, TimelineEventType.LLM_TOOL_CALL, shown,
             event_metadata(TimelineEventType.LLM_TOOL_CALL, server_name=server, tool_name=tool,
                            arguments=masked_input, source="react", fallback_provider=ctx.fallback_provider))
        if reason := ctx.liveness.stop_reason():
            return stopped_outcome(reason)
        call = ToolCall(id=f"react-{ctx.state.iteration}", name=action, arguments=action_input)
        tool_result = ctx.tools.execute(call)
        ctx.recorder.add_messages([ConversationMessage(role="user", content=format_observation(tool_result))])
        return StepOutcome(StepStatus.CONTINUE)

    def conclude(self, ctx: ExecutionContext, result: LLMCallResult) -> StepOutcome:
        """The forced reply may or may not follow the format: its Final Answer, else the whole text."""
        text = result.response.text
        parsed = parse_react(text, [])
        if parsed.kind == "final_answer":
            answer, thought = parsed.final_answer, parsed.thought
        else:
            answer, thought = text.strip(), ""
        pending = _show_thought(ctx, result, thought)
        ctx.recorder.add_messages([ConversationMessage(role="assistant", content=text)])
        return complete(ctx, answer, pending)


def _show_thought(ctx: ExecutionContext, result: LLMCallResult, thought: str) -> int | None:
    """Show the thought; returns the streamed event when it is still free to show something else."""
    if thought:
        show(ctx, result.text_event_id, TimelineEventType.LLM_THINKING, thought,
             event_metadata(TimelineEventType.LLM_THINKING, source="react"))
        return None
    return result.text_event_id
