"""What follows an execution's end: its stage joins, then the next stage, a synthesis, or the session's finish.

The writes (the terminal status, the stage's close, the next stage) go through tarsy.services; this module
decides between them. All of it happens in one transaction: the join that closes a stage and the creation of
the next one commit together, so a crash never leaves a closed stage without its successor.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from tarsy.config import get_config
from tarsy.decisions import FinishSession, Nothing, StartStage, StartSynthesis, enact_on_commit
from tarsy.models import AgentExecution, AlertSession, ExecStatus, SessionStatus, Stage, StageKind
from tarsy.services import executions, sessions, stages
from tarsy.services import sub_agents as sub_agent_rows

from .sub_agents.decisions import wake
from .sub_agents.orchestrators import may_dispatch


def next_after_stage(stage: Stage, session: AlertSession) -> StartStage | StartSynthesis | FinishSession | Nothing:
    """Given a stage that just closed and its session: a parallel stage is followed by its synthesis, a
    completed stage by the chain's next one; a failed stage, a session no longer running, a reached budget or
    the chain's end finish the session. A chat stage has nothing after it (its close answered the question)."""
    if stage.kind == StageKind.CHAT:
        return Nothing()
    session_id = str(session.id)
    if session.status != SessionStatus.IN_PROGRESS or stage.status != ExecStatus.COMPLETED:
        return FinishSession(session_id)
    if stage.kind == StageKind.INVESTIGATION and stage.parallel_type:
        return StartSynthesis(session_id, stage.id)
    next_index = (stage.chain_stage_index or 0) + 1
    if session.budget_reached:  # the budget is spent: the findings so far are the answer
        return FinishSession(session_id)
    if next_index < len(get_config().chain(session.chain_id).stages):
        return StartStage(session_id, next_index)
    return FinishSession(session_id)


def execution_end(*, execution_id: Any, status: str, error: str = "", final_analysis: str = "",
                  claimed: AgentExecution | None = None) -> bool:
    """End the execution (compare-and-set) and, when it was the stage's last, close the stage and carry out
    what follows. False if the execution had already ended. Inside a caller's transaction (the iteration's
    completion) this joins it: no savepoint, as nothing here is retried on its own. `claimed`: see
    executions.execution_mark_ended."""
    with transaction.atomic(savepoint=False):
        ended = executions.execution_mark_ended(execution_id=execution_id, status=status, error=error,
                                                final_analysis=final_analysis, claimed=claimed)
        if ended is None:
            return False
        _sub_agents_after_end(execution_id, ended)
        stage = stages.stage_join(stage_id=ended.stage_id)
        if stage is not None:
            session = sessions.session_lock(session_id=stage.session_id)
            _carry_out(next_after_stage(stage, session), session, stage)
    return True


def _sub_agents_after_end(execution_id: Any, ended: executions.Ended) -> None:
    """An orchestrator that ends takes its unfinished sub-agents with it; a sub-agent that ends wakes its parked
    orchestrator and frees a slot for a queued sibling (tarsy.pipeline.sub_agents). Other executions cost
    nothing here."""
    if may_dispatch(ended.agent_config_name):
        for child_id in sub_agent_rows.sub_agents_unfinished(parent_id=execution_id):
            execution_end(execution_id=child_id, status=ExecStatus.CANCELLED, error="Its orchestrator ended")
    if ended.parent_execution_id is not None:
        wake(ended.parent_execution_id)


def _carry_out(decision: StartStage | StartSynthesis | FinishSession | Nothing, session: AlertSession,
               stage: Stage) -> None:
    if isinstance(decision, StartStage):
        stages.stage_start_chain(session=session, chain_stage_index=decision.chain_stage_index)
    elif isinstance(decision, StartSynthesis):
        stages.stage_start_synthesis(session=session, parallel_stage=stage)
    else:
        enact_on_commit([decision])
