"""What every controller does alike around its LLM call: first messages, failures, forced conclusion."""

from __future__ import annotations

from typing import Callable

from agents.context import ExecutionContext
from agents.llm.types import ConversationMessage

from .base import StepOutcome, StepStatus, timeout_outcome
from .llm_call import LLMCallResult

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


def stopped_outcome(reason: str) -> StepOutcome:
    status = StepStatus.CANCELLED if reason == "cancelled" else StepStatus.TIMED_OUT
    message = "Cancelled by user" if reason == "cancelled" else "Session timeout reached"
    return StepOutcome(status, error=message)


def failure_outcome(ctx: ExecutionContext, result: LLMCallResult) -> StepOutcome | None:
    """None when the call succeeded. A failed call is recorded, shown, and fed back to the model so the
    next iteration can recover; a stopped session ends the execution."""
    if result.stopped:
        return stopped_outcome(result.stopped)
    error = result.error
    if error is None:
        return None
    if result.timed_out:
        outcome = timeout_outcome(ctx.state, f"LLM call timed out in iteration {ctx.state.iteration}")
        ctx.recorder.add_event("error", outcome.error, {"timeout": True, "code": error.code}, status="timed_out")
        return outcome
    ctx.recorder.add_event("error", f"LLM error: {error.message}", {"code": error.code, "retryable": error.retryable},
                           status="failed")
    ctx.recorder.add_messages([ConversationMessage(
        role="user",
        content=f"Error: the previous request to the model failed ({error.message}). Continue the investigation.",
    )])
    return StepOutcome(StepStatus.CONTINUE, error=error.message, consecutive_timeouts=0,
                       last_interaction_failed=True)


def needs_forced_conclusion(ctx: ExecutionContext) -> bool:
    return ctx.state.iteration > ctx.state.max_iterations


def max_iterations_failure(ctx: ExecutionContext) -> StepOutcome:
    message = f"Reached the maximum of {ctx.state.max_iterations} iterations and the last LLM call failed"
    ctx.recorder.add_event("error", message, {"max_iterations": True}, status="failed")
    return StepOutcome(StepStatus.FAILED, error=message, last_interaction_failed=True)


def complete(ctx: ExecutionContext, answer: str, text_event_id: int | None) -> StepOutcome:
    """Show the final analysis (re-typing the streamed text event when there is one)."""
    if text_event_id is not None:
        ctx.recorder.complete_event(text_event_id, answer, event_type="final_analysis")
    else:
        ctx.recorder.add_event("final_analysis", answer)
    return StepOutcome(StepStatus.COMPLETED, final_analysis=answer)
