"""Parked executions: an orchestrator waiting for its sub-agents, or an action agent waiting for a person, ends
its iteration with no task in flight (`services.executions.execution_park`). What it waits for wakes it here."""

from __future__ import annotations

from typing import Any

from tarsy.decisions import RunIteration, enact_on_commit
from tarsy.models import AgentExecution
from tarsy.services import executions


def wake_parked(execution_id: Any) -> AgentExecution | None:
    """Wake a parked execution, once (under its row lock): its next iteration is queued on commit. None when it was
    not parked."""
    execution = executions.execution_wake(execution_id=execution_id)
    if execution is not None:
        enact_on_commit([RunIteration(str(execution.id), execution.iterations_completed + 1,
                                      execution.iteration_timeout_s)])
    return execution
