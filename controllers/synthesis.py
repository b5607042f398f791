"""Synthesis: one tool-less call over the formatted investigations of a parallel stage."""

from __future__ import annotations

from agents.context import ExecutionContext
from agents.llm.types import ConversationMessage
from agents.prompts.builder import build_synthesis_messages

from .base import StepOutcome, StepStatus
from .common import complete, conversation, failure_outcome
from .llm_call import call_llm
from .native_thinking import record_native_tool_results

MAX_SYNTHESIS_ATTEMPTS = 3  # a single call: retry a failed one a couple of times, then fail the stage


def _initial(ctx: ExecutionContext) -> list[ConversationMessage]:
    return build_synthesis_messages(config=ctx.config, alert_type=ctx.alert_type, alert_data=ctx.alert_data,
                                    runbook=ctx.runbook, parallel_results=ctx.parallel_results)


class SynthesisController:
    def step(self, ctx: ExecutionContext) -> StepOutcome:
        messages = conversation(ctx, _initial)
        result = call_llm(ctx, messages, interaction_type="synthesis", text_event_type="llm_response",
                          thinking_source="native" if "native" in ctx.config.iteration_strategy else "react")
        failed = failure_outcome(ctx, result)
        if failed:
            if result.text_event_id is not None:
                ctx.recorder.complete_event(result.text_event_id, result.response.text, status="failed")
            if failed.status is StepStatus.CONTINUE and ctx.state.iteration >= MAX_SYNTHESIS_ATTEMPTS:
                return StepOutcome(StepStatus.FAILED, error=f"Synthesis failed: {failed.error}",
                                   last_interaction_failed=True)
            return failed
        record_native_tool_results(ctx, result.response)
        ctx.recorder.add_messages([result.response.as_assistant_message()])
        return complete(ctx, result.response.text.strip(), result.text_event_id)
