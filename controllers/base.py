"""Controller protocol: one iteration per call; the loop is the Celery task chain."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from agents.context import ExecutionContext, IterationState


class StepStatus(enum.StrEnum):
    CONTINUE = "continue"  # enqueue the next iteration
    COMPLETED = "completed"  # final analysis produced
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


@dataclass
class StepOutcome:
    status: StepStatus
    final_analysis: str = ""
    error: str = ""
    # counters the task persists on AgentExecution with the iteration's completion
    consecutive_timeouts: int = 0
    last_interaction_failed: bool = False

    @property
    def is_terminal(self) -> bool:
        return self.status is not StepStatus.CONTINUE


class Controller(Protocol):
    def step(self, ctx: ExecutionContext) -> StepOutcome:
        """Perform iteration `ctx.state.iteration`, writing progressively through `ctx.recorder`."""
        ...


MAX_CONSECUTIVE_TIMEOUTS = 2  # one slow call may be bad luck; two in a row means the agent is stuck (ref 001)


def timeout_outcome(state: IterationState, message: str) -> StepOutcome:
    """An iteration ran out of time: continue, unless it is the second timeout in a row."""
    timeouts = state.consecutive_timeouts + 1
    if timeouts >= MAX_CONSECUTIVE_TIMEOUTS:
        return StepOutcome(StepStatus.FAILED, error=f"{message} ({timeouts} consecutive timeouts)",
                           consecutive_timeouts=timeouts, last_interaction_failed=True)
    return StepOutcome(StepStatus.CONTINUE, error=message, consecutive_timeouts=timeouts,
                       last_interaction_failed=True)
