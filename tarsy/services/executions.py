"""Agent executions: the iteration claim and its lease, completion, terminal status, resumes.

Every write is a compare-and-set on the row (or runs under its row lock), so a duplicated or redelivered
task changes nothing. What the state means for what happens next is decided in tarsy.pipeline.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone

from agents.llm.types import ConversationMessage
from tarsy.db.precompiled import Precompiled
from tarsy.models import (
    TERMINAL_EXEC_STATUSES,
    AgentExecution,
    AlertOccurrence,
    AlertSession,
    ExecStatus,
    OccurrenceKind,
    SessionStatus,
    StageKind,
    TimelineEvent,
)

from . import interactions, messages, timeline
from .recorder import HEARTBEAT_INTERVAL_S, WriteBatch

# Read with the claim: the recorder numbers this iteration's timeline events without a lookup of its own.
_LAST_EVENT_SEQUENCE = Subquery(TimelineEvent.objects.filter(execution_id=OuterRef("pk"))
                                .order_by("-sequence_number").values("sequence_number")[:1])
# Read with the claim too: most sessions never have related alerts, and their steps skip looking for new ones.
_LATEST_RELATED_ALERT = Subquery(AlertOccurrence.objects.filter(session_id=OuterRef("session_id"),
                                                                kind=OccurrenceKind.RELATED)
                                 .order_by("-id").values("id")[:1])


def _claim_queryset(execution_id: Any, lock: bool = True):
    annotations: dict[str, Any] = {"last_event_sequence": _LAST_EVENT_SEQUENCE,
                                   "latest_related_alert": _LATEST_RELATED_ALERT}
    conversation = messages.conversation_annotation()
    if conversation is not None:
        annotations["stored_conversation"] = conversation
    executions = AgentExecution.objects.select_for_update(of=("self",)) if lock else AgentExecution.objects
    return (executions.select_related("stage", "session").annotate(**annotations).filter(id=execution_id)
            .order_by())  # by primary key: no ORDER BY, as .first() would add


# Every iteration runs one of these: compiled once per process.
_claim = Precompiled(_claim_queryset)


def _claimed_rows(sql: str) -> str:
    """The claim's SELECT reading the row the UPDATE in front of it returns (its new version), not the table."""
    table = connection.ops.quote_name(AgentExecution._meta.db_table)
    if sql.count(f"FROM {table} ") != 1:
        raise ValueError("the claim's SELECT no longer reads the execution table in one place")
    terminal = ", ".join(["%s"] * len(TERMINAL_EXEC_STATUSES))
    update = (f"UPDATE {table} SET current_iteration = %s, status = %s, started_at = COALESCE(started_at, %s), "
              f"last_heartbeat_at = %s, lease_expires_at = %s + make_interval(secs => iteration_timeout_s + %s) "
              f"WHERE id = %s AND iterations_completed = %s AND current_iteration <> %s "
              f"AND status NOT IN ({terminal}) RETURNING *")
    return f"WITH claimed AS ({update}) " + sql.replace(f"FROM {table} ", f"FROM claimed {table} ", 1)


_claim_next = Precompiled(lambda execution_id: _claim_queryset(execution_id, lock=False), wrap=_claimed_rows)


def execution_claim_next(*, execution_id: Any, iteration: int, now: datetime) -> AgentExecution | None:
    """The common case of a claim in one statement (PostgreSQL): the next iteration of a running execution that
    no task holds gets its lease, and the execution comes back as `execution_lock_for_iteration` returns it,
    already claimed (call inside a transaction; roll it back to undo the claim). None when the case is not
    that simple (a re-run of an interrupted iteration, a duplicate task, a finished execution), or elsewhere:
    the caller then locks and decides (`execution_lock_for_iteration`, `execution_claim_iteration`)."""
    if connection.vendor != "postgresql":
        return None
    before = (iteration, ExecStatus.ACTIVE, now, now, now, settings.ITERATION_HARD_LIMIT_GRACE_S, execution_id,
              iteration - 1, iteration, *TERMINAL_EXEC_STATUSES)
    claimed = _claim_next(execution_id, before=before)
    if not claimed:
        return None
    execution = claimed[0]
    _session_heartbeat(execution, now)
    return execution


def execution_lock_for_iteration(*, execution_id: Any) -> AgentExecution | None:
    """The execution under its row lock (call inside a transaction), with its stage and session, its last
    timeline sequence number (`last_event_sequence`), its session's latest related alert
    (`latest_related_alert`, None when there is none) and, on PostgreSQL, its stored conversation (see
    `execution_conversation`), in one statement."""
    claimed = _claim(execution_id)
    return claimed[0] if claimed else None


def execution_conversation(*, execution: AgentExecution) -> tuple[list[ConversationMessage], int] | None:
    """The conversation (and the next message's sequence number) read with the claim, or None when the claim did
    not read it or an interrupted attempt's messages were discarded since (see `iteration_discard`)."""
    rows = getattr(execution, "stored_conversation", None)
    return None if rows is None else messages.conversation_from_annotation(rows)


def iteration_discard(*, execution_id: Any, iteration: int) -> None:
    """Remove what an interrupted attempt of this iteration wrote, before it runs again (no duplicate rows); its
    LLM and MCP records stay, marked superseded."""
    messages.messages_discard_iteration(execution_id=execution_id, iteration=iteration)
    interactions.interactions_supersede_iteration(execution_id=execution_id, iteration=iteration)
    timeline.timeline_events_discard_iteration(execution_id=execution_id, iteration=iteration)


def execution_claim_iteration(*, execution: AgentExecution, iteration: int, now: datetime) -> None:
    """Hold `iteration` under a lease for one task; stamps both heartbeats (the session's only when due).
    `execution` comes from execution_lock_for_iteration, in the same transaction."""
    lease = execution.iteration_timeout_s + settings.ITERATION_HARD_LIMIT_GRACE_S
    execution.current_iteration = iteration
    execution.status = ExecStatus.ACTIVE
    execution.started_at = execution.started_at or now
    execution.last_heartbeat_at = now
    execution.lease_expires_at = now + timedelta(seconds=lease)
    execution.save(update_fields=["current_iteration", "status", "started_at", "last_heartbeat_at",
                                  "lease_expires_at"])
    _session_heartbeat(execution, now)


def _session_heartbeat(execution: AgentExecution, now: datetime) -> None:
    """Stamp the session's heartbeat with the claim, when it is due."""
    beat = execution.session.last_heartbeat_at
    if beat is None or (now - beat).total_seconds() >= HEARTBEAT_INTERVAL_S:
        AlertSession.all_objects.filter(id=execution.session_id).update(last_heartbeat_at=now)


def execution_lease_release(*, execution_id: Any, iteration: int) -> None:
    """Give up the lease of an unfinished iteration so a retried task can claim it at once."""
    AgentExecution.objects.filter(id=execution_id, current_iteration=iteration,
                                  iterations_completed__lt=iteration).update(lease_expires_at=None)


def iteration_complete(*, execution_id: Any, iteration: int, consecutive_timeouts: int,
                       last_interaction_failed: bool, recorded: WriteBatch | None = None) -> bool:
    """Compare-and-set: iteration `iteration` is done (once), its lease released. Call inside a transaction:
    with the completion go the step's last `recorded` rows and its usage — the one place usage is applied, to
    the execution and its session alike. False when another task already completed it (then nothing is
    written)."""
    usage = recorded.usage if recorded is not None else interactions.UsageTally()
    completion = {"iterations_completed": iteration, "consecutive_timeouts": consecutive_timeouts,
                  "last_interaction_failed": last_interaction_failed, "last_heartbeat_at": timezone.now(),
                  "lease_expires_at": None}
    if recorded is not None and connection.vendor == "postgresql" and (usage.changes() or usage.interacted):
        done = _complete_with_session_usage(execution_id, iteration, completion, usage)
    else:
        done = bool(AgentExecution.objects.filter(id=execution_id, iterations_completed=iteration - 1).update(
            **completion, **usage.changes()))
        if done and recorded is not None:
            interactions.usage_apply_session(session_id=recorded.session_id, usage=usage)
    if done and recorded is not None:
        recorded.write()
    return done


def _complete_with_session_usage(execution_id: Any, iteration: int, completion: dict[str, Any],
                                 usage: interactions.UsageTally) -> bool:
    """The compare-and-set and both rows' usage in one statement (PostgreSQL: an UPDATE in a WITH clause, which
    the ORM cannot write); the execution row is locked first, as everywhere. Elsewhere two UPDATEs do the same."""
    execution_table, session_table = AgentExecution._meta.db_table, AlertSession._meta.db_table
    columns = list(completion)
    sets = [f"{c} = %s" for c in columns] + [f"{f} = {f} + %s" for f in interactions.TOTAL_FIELDS]
    session_sets = [f"{f} = {session_table}.{f} + %s" for f in interactions.TOTAL_FIELDS]
    session_sets.append(f"last_interaction_at = {'%s' if usage.interacted else 'last_interaction_at'}")
    sql = (f"WITH done AS (UPDATE {execution_table} SET {', '.join(sets)} "
           f"WHERE id = %s AND iterations_completed = %s RETURNING session_id) "
           f"UPDATE {session_table} SET {', '.join(session_sets)} FROM done WHERE {session_table}.id = done.session_id")
    totals = [usage.totals[f] for f in interactions.TOTAL_FIELDS]
    params = [completion[c] for c in columns] + totals + [execution_id, iteration - 1] + totals
    if usage.interacted:
        params.append(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount == 1


def execution_mark_terminal(*, execution_id: Any, status: str, error: str = "", final_analysis: str = "") -> int | None:
    """Compare-and-set to a terminal status. Returns the execution's stage id, or None when it was already
    terminal (someone else ended it)."""
    updated = AgentExecution.objects.filter(id=execution_id).exclude(status__in=TERMINAL_EXEC_STATUSES).update(
        status=status, error_message=error, final_analysis=final_analysis, completed_at=timezone.now(),
        lease_expires_at=None,
    )
    if not updated:
        return None
    return AgentExecution.objects.filter(id=execution_id).values_list("stage_id", flat=True).get()


def executions_idle(*, session_id: Any, now: datetime) -> list[Any]:
    """Ids of the session's unfinished executions that no task holds (no lease, or an expired one)."""
    idle = AgentExecution.objects.filter(session_id=session_id).exclude(status__in=TERMINAL_EXEC_STATUSES).filter(
        Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lt=now))
    return list(idle.values_list("id", flat=True))


def executions_unfinished_exist(*, session_id: Any) -> bool:
    return AgentExecution.objects.filter(session_id=session_id).exclude(status__in=TERMINAL_EXEC_STATUSES).exists()


def executions_running_chat(*, session_id: Any) -> list[Any]:
    """Ids of the session's chat executions still pending or running."""
    return list(AgentExecution.objects.filter(session_id=session_id, stage__kind=StageKind.CHAT,
                                              status__in=[ExecStatus.PENDING, ExecStatus.ACTIVE])
                .values_list("id", flat=True))


def executions_orphaned(*, now: datetime, stale: datetime) -> list[AgentExecution]:
    """Unfinished executions of live sessions (and chats) whose task is gone: a lease that ran out (the task
    died mid-iteration), or no lease and no sign of life since `stale` (a queued task got lost)."""
    live = Q(session__status=SessionStatus.IN_PROGRESS) | Q(stage__kind=StageKind.CHAT)
    running = AgentExecution.objects.filter(live).exclude(status__in=TERMINAL_EXEC_STATUSES)
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
