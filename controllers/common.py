"""What every controller does alike: the step skeleton, failures, forced conclusion, showing results.

`IterationController.step` is the one iteration loop body all strategies share: rebuild (or start) the
conversation, decide between a normal iteration and the forced conclusion, call the LLM through `call_llm`,
turn a failed call into the right outcome, and hand a good reply to the strategy's `handle` / `conclude`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.context import ExecutionContext
from agents.llm.types import ConversationMessage, ToolDefinition
from agents.prompts.builder import forced_conclusion_prompt
from agents.timeline_events import TextSource, TimelineEventType, event_metadata

from .base import StepOutcome, StepStatus, timeout_outcome
from .llm_call import LLMCallResult, call_llm

MessageBuilder = Callable[[ExecutionContext], list[ConversationMessage]]


def interaction_type(ctx: ExecutionContext, default: str = "iteration") -> str:
    return "chat" if ctx.chat is not None else default


def conversation(ctx: ExecutionContext, build_initial: MessageBuilder) -> list[ConversationMessage]:
    """The stored conversation; the first step writes the system and user messages."""
    messages = ctx.recorder.conversation()
    if not messages:
        messages = build_initial(ctx)
        ctx.recorder.add_messages(messages)
    return messages


def show(ctx: ExecutionContext, event_id: int | None, event_type: str, content: str,
         metadata: dict[str, Any] | None = None, status: str = "completed") -> None:
    """Put content on the timeline: into the event already streamed for it (re-typed), or a new event."""
    if event_id is not None:
        ctx.recorder.complete_event(event_id, content, status=status, metadata=metadata, event_type=event_type)
    else:
        ctx.recorder.add_event(event_type, content, metadata, status=status)


def stopped_outcome(reason: str) -> StepOutcome:
    status = StepStatus.CANCELLED if reason == "cancelled" else StepStatus.TIMED_OUT
    message = "Cancelled by user" if reason == "cancelled" else "Session timeout reached"
    return StepOutcome(status, error=message)


def failure_outcome(ctx: ExecutionContext, result: LLMCallResult, *, final: str | None = None) -> StepOutcome | None:
    """None when the call succeeded. A stopped session ends the execution. A failed call is shown as an error
    event; it ends the execution when `final` (a label such as "Forced conclusion failed") says there is no
    next attempt, or on the second timeout in a row; otherwise the error goes back to the model as a user
    message so the next iteration can recover."""
    if result.stopped:
        return stopped_outcome(result.stopped)
    error = result.error
    if error is None:
        return None
    if result.text_event_id is not None:  # keep what streamed before the failure, marked as failed
        ctx.recorder.complete_event(result.text_event_id, result.response.text, status="failed")
        result.text_event_id = None
    if result.timed_out:
        message = f"LLM call timed out in iteration {ctx.state.iteration}"
        ctx.recorder.add_event(TimelineEventType.ERROR, message,
                               event_metadata(TimelineEventType.ERROR, timeout=True, code=error.code),
                               status="timed_out")
        outcome = timeout_outcome(ctx.state, message)
    else:
        message = f"LLM error: {error.message}"
        ctx.recorder.add_event(TimelineEventType.ERROR, message,
                               event_metadata(TimelineEventType.ERROR, code=error.code, retryable=error.retryable),
                               status="failed")
        outcome = StepOutcome(StepStatus.CONTINUE, error=error.message, consecutive_timeouts=0,
                              last_interaction_failed=True)
    if final:
        return StepOutcome(StepStatus.FAILED, error=f"{final}: {message}",
                           consecutive_timeouts=outcome.consecutive_timeouts, last_interaction_failed=True)
    if outcome.status is StepStatus.CONTINUE:
        ctx.recorder.add_messages([ConversationMessage(
            role="user", content=f"Error from the previous attempt: {message}. Please try again.",
        )])
    return outcome


def needs_forced_conclusion(ctx: ExecutionContext) -> bool:
    """Out of iterations, or the investigation's budget is used up: conclude with what the agent has."""
    return ctx.state.iteration > ctx.state.max_iterations or bool(ctx.state.budget_reached)


def max_iterations_failure(ctx: ExecutionContext) -> StepOutcome:
    reached = ctx.state.budget_reached or f"Reached the maximum of {ctx.state.max_iterations} iterations"
    message = f"{reached} and the last LLM call failed"
    ctx.recorder.add_event(TimelineEventType.ERROR, message,
                           event_metadata(TimelineEventType.ERROR, max_iterations=True), status="failed")
    return StepOutcome(StepStatus.FAILED, error=message, last_interaction_failed=True)


def complete(ctx: ExecutionContext, answer: str, text_event_id: int | None) -> StepOutcome:
    """Show the final analysis (re-typing the streamed text event when there is one)."""
    metadata = event_metadata(TimelineEventType.FINAL_ANALYSIS, fallback_provider=ctx.fallback_provider) \
        if ctx.fallback_provider else None
    show(ctx, text_event_id, TimelineEventType.FINAL_ANALYSIS, answer, metadata)
    return StepOutcome(StepStatus.COMPLETED, final_analysis=answer)


class IterationController:
    """One iteration of any strategy; subclasses say how to start, what to bind, and what a reply means."""

    strategy = ""  # forced-conclusion prompt variant ("react" / "native-thinking")
    text_event_type: TimelineEventType | None = TimelineEventType.LLM_RESPONSE  # where reply text streams
    text_source: TextSource = "native"  # metadata `source` of the streamed text event
    default_interaction = "iteration"
    forces_conclusion = True  # False: the iteration limit never applies (single-call strategies)
    max_attempts: int | None = None  # a failed call on this attempt is final
    native_tools = True  # False: replies are read as text, so Gemini's server-side tools are not asked for

    def initial_messages(self, ctx: ExecutionContext) -> list[ConversationMessage]:
        raise NotImplementedError

    def bound_tools(self, ctx: ExecutionContext) -> list[ToolDefinition]:
        return []

    def handle(self, ctx: ExecutionContext, result: LLMCallResult) -> StepOutcome:
        """A successful reply in a normal iteration."""
        raise NotImplementedError

    def conclude(self, ctx: ExecutionContext, result: LLMCallResult) -> StepOutcome:
        """A successful reply to the forced-conclusion prompt: it is the final analysis."""
        raise NotImplementedError

    def step(self, ctx: ExecutionContext) -> StepOutcome:
        messages = conversation(ctx, self.initial_messages)
        forced = self.forces_conclusion and needs_forced_conclusion(ctx)
        if forced:
            if ctx.state.last_interaction_failed:
                return max_iterations_failure(ctx)
            prompt = ConversationMessage(role="user", content=forced_conclusion_prompt(self.strategy))
            ctx.recorder.add_messages([prompt])
            messages = [*messages, prompt]
        result = call_llm(
            ctx, messages,
            interaction_type="forced_conclusion" if forced else interaction_type(ctx, self.default_interaction),
            tools=None if forced else self.bound_tools(ctx),  # the forced call never offers tools
            text_event_type=self.text_event_type, text_source=self.text_source, native_tools=self.native_tools,
        )
        last_attempt = self.max_attempts is not None and ctx.state.iteration >= self.max_attempts
        final = "Forced conclusion failed" if forced else (f"Failed after {ctx.state.iteration} attempts"
                                                           if last_attempt else None)
        failed = failure_outcome(ctx, result, final=final)
        if failed:
            return failed
        return self.conclude(ctx, result) if forced else self.handle(ctx, result)
