"""What happens next, as values: the pipeline and the services decide, `tarsy.tasks` enqueues.

A decision is a small frozen value. Those that become a Celery task (`Enqueued`)
go through `enact_on_commit`, which hands them, inside the deciding transaction,
to the enactor `tarsy.tasks` registers at startup (`tarsy.celery.install_enactor`,
called from the app's `ready()`): it writes them to the transactional outbox and
queues them once the transaction commits (tarsy/outbox.py) — so nothing outside
`tarsy.tasks` imports it, and the import graph has no cycle. The others are
carried out by the pipeline inside the transaction that decided them (a new
stage is created with the join that ended the previous one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class RunIteration:
    """Run iteration `iteration` of the execution; `timeout` is its resolved iteration_timeout (0: the default)."""

    execution_id: str
    iteration: int
    timeout: float


@dataclass(frozen=True)
class FinishSession:
    """Close the session: final analysis, executive summary, terminal status."""

    session_id: str


@dataclass(frozen=True)
class ReapSession:
    """After a cancel: cancel what no task is working on, close the session once nothing runs."""

    session_id: str


@dataclass(frozen=True)
class ScoreSession:
    """Score a completed session's analysis in the background (tarsy.pipeline.scoring)."""

    session_id: str


@dataclass(frozen=True)
class ReflectSession:
    """Learn memories from a scored, reviewed or completed session (`trigger`: score / review / completion;
    tarsy.pipeline.memory.reflect)."""

    session_id: str
    trigger: str


@dataclass(frozen=True)
class DispatchSessions:
    """Claim pending sessions soon; requests close together share one dispatch task (see pipeline.dispatch)."""


@dataclass(frozen=True)
class SlackDeliver:
    """Bring the session's Slack message and thread up to date (tarsy.slack.delivery)."""

    session_id: str


@dataclass(frozen=True)
class EndExecution:
    """The execution is over: mark it terminal and join its stage."""

    execution_id: str
    status: str
    error: str = ""
    final_analysis: str = ""


@dataclass(frozen=True)
class StartStage:
    """Create stage `chain_stage_index` of the session's chain with its executions."""

    session_id: str
    chain_stage_index: int


@dataclass(frozen=True)
class StartSynthesis:
    """Create the synthesis stage that follows a parallel stage."""

    session_id: str
    parallel_stage_id: int


@dataclass(frozen=True)
class Nothing:
    """Nothing follows (a chat stage answered, a duplicate call)."""


Enqueued = RunIteration | FinishSession | ReapSession | DispatchSessions | ScoreSession | SlackDeliver | ReflectSession
Enactor = Callable[[list[Enqueued]], None]
ENQUEUED = (RunIteration, FinishSession, ReapSession, DispatchSessions, ScoreSession, SlackDeliver, ReflectSession)

_enactor: Enactor | None = None


def register_enactor(enactor: Enactor | None) -> None:
    """Install what turns decisions into tasks (tarsy.tasks.enact: called in the deciding transaction, it queues
    them once that commits); None uninstalls it."""
    global _enactor
    _enactor = enactor


def enactor_registered() -> bool:
    return _enactor is not None


def enact_on_commit(decisions: Iterable[Enqueued | Nothing]) -> None:
    """Enqueue the decisions once the current transaction commits (at once outside a transaction), in order.

    The enactor records them in the same transaction (the outbox): a rollback leaves neither record nor task, and
    a send that fails after the commit is retried by the outbox relay. Fails loudly, before the commit, when no
    enactor is registered or a decision is not one to enqueue: work decided and never enqueued would be lost
    silently."""
    work = [d for d in decisions if not isinstance(d, Nothing)]
    if not work:
        return
    for decision in work:
        if not isinstance(decision, ENQUEUED):
            raise TypeError(f"{decision!r} is carried out in its transaction, not enqueued")
    enactor = _enactor
    if enactor is None:
        raise RuntimeError("no enactor registered: tarsy.celery.install_enactor() runs in the tarsy app's ready()")
    enactor(work)
