"""Agent executions: the iteration claim and its lease, completion, terminal status, resumes.

Every write is a compare-and-set on the row (or runs under its row lock), so a duplicated or redelivered
task changes nothing. What the state means for what happens next is decided in tarsy.pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from tarsy.models import (
    TERMINAL_EXEC_STATUSES,
    ActionProposal,
    AgentExecution,
    AlertSession,
    ExecStatus,
    SessionStatus,
    StageKind,
    TimelineEvent,
)

from . import actions, interactions, messages, timeline
from .counters import CountersChange
from .events import batched_events, publish
from .recorder import HEARTBEAT_INTERVAL_S, WriteBatch

# Read with the claim: the execution's last timeline sequence number. The iteration's recorder numbers its events
# on from it (this task is the one writer of the execution's timeline while it holds the lease): no lookup.
_LAST_EVENT_SEQUENCE = Coalesce(Subquery(TimelineEvent.objects.filter(execution_id=OuterRef("id"))
                                         .order_by("-sequence_number").values("sequence_number")[:1]), 0)

# And whether the session ever had an action proposal: only then does its clock leave out the time proposals waited
# for a person (tarsy.services.actions.actions_wait_s), a query most sessions never need.
_SESSION_HAS_ACTIONS = Exists(ActionProposal.objects.filter(session_id=OuterRef("session_id")))


def execution_lock_for_iteration(*, execution_id: Any) -> AgentExecution | None:
    """The execution under its row lock (call inside a transaction), with its stage and session, its last timeline
    sequence number (`last_event_sequence`, 0 before its first event), whether its session has action
    proposals (`session_has_actions`) and its conversation (`conversation`: messages.conversation_decode reads
    it), all in one SELECT; None when there is no such execution.
    `get()`, not `first()`: first() would order by the model's ordering (a join on the stage) for one row."""
    try:
        return _CLAIM.get(id=execution_id)
    except AgentExecution.DoesNotExist:
        return None


# Built once per process: annotating resolves its three subqueries, which every claim would otherwise pay for
# again. Each claim's get() filters a clone (a QuerySet's methods return new querysets; this one is never
# evaluated, so it caches no rows).
_CLAIM: QuerySet[AgentExecution] = (
    AgentExecution.objects.select_for_update(of=("self",), no_key=True)
    .select_related("stage", "session__counters")
    .annotate(last_event_sequence=_LAST_EVENT_SEQUENCE, session_has_actions=_SESSION_HAS_ACTIONS,
              conversation=messages.messages_of_outer_execution()))


def iteration_discard(*, execution_id: Any, iteration: int) -> None:
    """Remove what an interrupted attempt of this iteration wrote, before it runs again (no duplicate rows); its
    LLM and MCP records stay, marked superseded."""
    messages.messages_discard_iteration(execution_id=execution_id, iteration=iteration)
    interactions.interactions_supersede_iteration(execution_id=execution_id, iteration=iteration)
    timeline.timeline_events_discard_iteration(execution_id=execution_id, iteration=iteration)


def lease_seconds(execution: AgentExecution) -> float:
    """How long a claim holds its iteration: the iteration's time limit and the hard limit's grace."""
    return execution.iteration_timeout_s + settings.ITERATION_HARD_LIMIT_GRACE_S


EXECUTION_STATUS_EVENT = "execution.status"


def execution_status_publish(*, execution_id: Any) -> None:
    """Tell the session's page an execution's new status, from the stored row, once the transaction commits.
    Published for the moves stage events do not carry: a sub-agent's (created, queued, started, ended) and an
    orchestrator's park and wake."""
    try:
        row = AgentExecution.objects.filter(id=execution_id).values(
            "session_id", "stage_id", "agent_name", "status", "parent_execution_id").get()
    except AgentExecution.DoesNotExist:
        return
    parent = row["parent_execution_id"]
    publish(EXECUTION_STATUS_EVENT, {
        "session_id": str(row["session_id"]), "stage_id": row["stage_id"], "execution_id": str(execution_id),
        "agent_name": row["agent_name"], "status": row["status"],
        "parent_execution_id": str(parent) if parent else None}, session_id=row["session_id"])


def execution_claim_iteration(*, execution: AgentExecution, iteration: int, now: datetime) -> None:
    """Hold `iteration` under a lease for one task; stamps both heartbeats (the session's only when due).
    `execution` comes from execution_lock_for_iteration, in the same transaction."""
    lease = lease_seconds(execution)
    # A sub-agent starting, or a woken orchestrator going on: the page shows it active (others show it by
    # their first timeline event).
    shown = execution.status != ExecStatus.ACTIVE and (
        execution.parent_execution_id is not None or execution.iterations_completed > 0)
    execution.current_iteration = iteration
    execution.attempt += 1  # under the row lock: the claimer's fencing token
    execution.status = ExecStatus.ACTIVE
    execution.started_at = execution.started_at or now
    execution.last_heartbeat_at = now
    execution.lease_expires_at = now + timedelta(seconds=lease)
    execution.save(update_fields=["current_iteration", "attempt", "status", "started_at", "last_heartbeat_at",
                                  "lease_expires_at"])
    if shown:
        execution_status_publish(execution_id=execution.id)
    _session_heartbeat(execution, now)


def _session_heartbeat(execution: AgentExecution, now: datetime) -> None:
    """Stamp the session's heartbeat with the claim, when it is due."""
    beat = execution.session.last_heartbeat_at
    if beat is None or (now - beat).total_seconds() >= HEARTBEAT_INTERVAL_S:
        AlertSession.all_objects.filter(id=execution.session_id).update(last_heartbeat_at=now)


def execution_lease_release(*, execution_id: Any, iteration: int, attempt: int | None = None) -> None:
    """Give up the lease of an unfinished iteration so a retried task can claim it at once (only while `attempt`,
    when given, still holds it)."""
    held = AgentExecution.objects.filter(id=execution_id, current_iteration=iteration,
                                         iterations_completed__lt=iteration)
    if attempt is not None:
        held = held.filter(attempt=attempt)
    held.update(lease_expires_at=None)


def iteration_complete(*, execution_id: Any, iteration: int, consecutive_timeouts: int,
                       last_interaction_failed: bool, recorded: WriteBatch | None = None) -> bool:
    """Compare-and-set: iteration `iteration` is done (once), its lease released. Call inside a transaction:
    with the completion go the step's last `recorded` rows and its usage — the one place usage is applied, to
    the execution and its session alike. False when another task already completed it, or a later attempt has
    claimed the iteration since `recorded`'s (then nothing is written)."""
    usage = recorded.usage if recorded is not None else interactions.UsageTally()
    current = AgentExecution.objects.filter(id=execution_id, iterations_completed=iteration - 1)
    if recorded is not None and recorded.attempt is not None:
        current = current.filter(attempt=recorded.attempt)
    done = bool(current.update(
        iterations_completed=iteration, consecutive_timeouts=consecutive_timeouts,
        last_interaction_failed=last_interaction_failed, last_heartbeat_at=timezone.now(), lease_expires_at=None,
        **usage.changes()))
    if done and recorded is not None:
        recorded.calls_close()
        # The session's totals go with the statement that numbers the batch's events (services.events).
        totals = CountersChange(recorded.session_id, add=usage.additions(),
                                assign={"last_interaction_at": timezone.now()} if usage.interacted else {})
        with batched_events(change=totals):
            recorded.write(fenced=True)  # the compare-and-set above holds the row for this attempt
    return done


@dataclass(frozen=True)
class Ended:
    """An execution just marked terminal: its stage, and what sub-agent bookkeeping needs (tarsy.pipeline)."""

    stage_id: int
    parent_execution_id: Any
    agent_config_name: str


def execution_mark_ended(*, execution_id: Any, status: str, error: str = "", final_analysis: str = "",
                         claimed: AgentExecution | None = None) -> Ended | None:
    """Compare-and-set to a terminal status. None when it was already terminal (someone else ended it).
    `claimed`: the row as the iteration's claim read it, in the transaction that still holds its lock, when its
    session has no action proposals (none when the claim read, none written since): its stage, parent and agent
    need no read again, nor its proposals."""
    updated = AgentExecution.objects.filter(id=execution_id).exclude(status__in=TERMINAL_EXEC_STATUSES).update(
        status=status, error_message=error, final_analysis=final_analysis, completed_at=timezone.now(),
        lease_expires_at=None,
    )
    if not updated:
        return None
    if claimed is not None:
        if claimed.parent_execution_id is not None:
            execution_status_publish(execution_id=execution_id)
        return Ended(claimed.stage_id, claimed.parent_execution_id, claimed.agent_config_name)
    stage_id, parent_id, agent_config_name, unsettled = (
        AgentExecution.objects.filter(id=execution_id)
        .annotate(unsettled=actions.actions_unsettled(execution_id=OuterRef("id")))
        .values_list("stage_id", "parent_execution_id", "agent_config_name", "unsettled").get())
    if unsettled:  # read with the row: most executions never propose, and pay no statement for it
        actions.actions_settle_ended(execution_ids=[execution_id], ended_as=status)
    if parent_id is not None:  # a sub-agent's end (a stage agent's shows with its stage's)
        execution_status_publish(execution_id=execution_id)
    return Ended(stage_id, parent_id, agent_config_name)


def executions_idle(*, session_id: Any, now: datetime) -> list[Any]:
    """Ids of the session's unfinished executions that no task holds (no lease, or an expired one)."""
    idle = AgentExecution.objects.filter(session_id=session_id).exclude(status__in=TERMINAL_EXEC_STATUSES).filter(
        Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
    return list(idle.values_list("id", flat=True))


def executions_unfinished_exist(*, session_id: Any) -> bool:
    return AgentExecution.objects.filter(session_id=session_id).exclude(status__in=TERMINAL_EXEC_STATUSES).exists()


def executions_running_chat(*, session_id: Any) -> list[Any]:
    """Ids of the session's chat executions not finished (pending, running, parked, or a sub-agent queued)."""
    return list(AgentExecution.objects.filter(session_id=session_id, stage__kind=StageKind.CHAT)
                .exclude(status__in=TERMINAL_EXEC_STATUSES).values_list("id", flat=True))


def executions_orphaned(*, now: datetime, stale: datetime) -> list[AgentExecution]:
    """Unfinished executions of live sessions (and chats) whose task is gone: a lease that ran out (the task
    died mid-iteration), or no lease and no sign of life since `stale` (a queued task got lost)."""
    live = Q(session__status=SessionStatus.IN_PROGRESS) | Q(stage__kind=StageKind.CHAT)
    # A parked orchestrator and a queued sub-agent have no task on purpose: a sub-agent's end starts them.
    running = AgentExecution.objects.filter(live).exclude(
        status__in=[*TERMINAL_EXEC_STATUSES, ExecStatus.WAITING, ExecStatus.QUEUED])
    crashed = running.filter(lease_expires_at__lt=now)
    lost = running.filter(lease_expires_at__isnull=True).filter(
        Q(last_heartbeat_at__lt=stale) | Q(last_heartbeat_at__isnull=True, created_at__lt=stale))
    return list(crashed) + list(lost)


def execution_resume_mark(*, execution: AgentExecution, now: datetime) -> bool:
    """Count a resume (compare-and-set on the count the caller read). Clearing the lease lets the re-enqueued
    task claim the iteration, and stops the next sweep from resuming it again before it had a chance to start."""
    with transaction.atomic():
        return bool(AgentExecution.objects.filter(id=execution.id, resume_count=execution.resume_count).update(
            resume_count=F("resume_count") + 1, last_heartbeat_at=now, lease_expires_at=None))


def execution_provider_switch(*, execution_id: Any, provider: str, backend: str, drop_provider_state: bool) -> None:
    """A fallback provider took over: the execution's next calls go to it (any worker, any iteration).

    One transaction, so a stored conversation never names the new provider while keeping state it cannot replay."""
    with transaction.atomic():
        AgentExecution.objects.filter(id=execution_id).update(llm_provider=provider, llm_backend=backend)
        if drop_provider_state:
            messages.messages_drop_provider_state(execution_id=execution_id)


def execution_park(*, execution_id: Any) -> None:
    """Call in the transaction that completed the execution's iteration (it holds the row): no task follows until
    something it waits for wakes it (a sub-agent's end, a decision on its action proposal)."""
    if AgentExecution.objects.filter(id=execution_id).exclude(status__in=TERMINAL_EXEC_STATUSES).update(
            status=ExecStatus.WAITING, lease_expires_at=None):
        execution_status_publish(execution_id=execution_id)


def execution_wake(*, execution_id: Any) -> AgentExecution | None:
    """Under the execution's row lock: a parked one becomes pending its next iteration (returned); None when it
    was not parked (running: it reads the news when its iteration completes; or already woken, or ended).
    `get()`: first() would order by the model's ordering, joining the stage and the session, and lock their rows
    too."""
    try:
        parent = AgentExecution.objects.select_for_update(no_key=True).get(id=execution_id)
    except AgentExecution.DoesNotExist:
        return None
    if parent.status != ExecStatus.WAITING:
        return None
    parent.status = ExecStatus.PENDING
    parent.last_heartbeat_at = timezone.now()  # the orphan sweep counts from the wake
    parent.save(update_fields=["status", "last_heartbeat_at"])
    execution_status_publish(execution_id=parent.id)
    return parent
