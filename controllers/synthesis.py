"""Synthesis: one tool-less call over the formatted investigations of a parallel stage."""

from __future__ import annotations

from agents.context import ExecutionContext
from agents.llm.types import ConversationMessage
from agents.prompts.builder import build_synthesis_messages

from .base import StepOutcome
from .common import IterationController
from .llm_call import LLMCallResult
from .native_thinking import finish_with_reply

MAX_SYNTHESIS_ATTEMPTS = 3  # a single call: retry a failed one a couple of times, then fail the stage


class SynthesisController(IterationController):
    """`synthesis` and `synthesis-native-thinking` alike; only the backend differs (resolved config)."""

    default_interaction = "synthesis"
    forces_conclusion = False
    max_attempts = MAX_SYNTHESIS_ATTEMPTS

    def initial_messages(self, ctx: ExecutionContext) -> list[ConversationMessage]:
        return build_synthesis_messages(config=ctx.config, alert_type=ctx.alert_type, alert_data=ctx.alert_data,
                                        runbook=ctx.runbook, parallel_results=ctx.parallel_results)

    def handle(self, ctx: ExecutionContext, result: LLMCallResult) -> StepOutcome:
        return finish_with_reply(ctx, result)

    conclude = handle
