"""Runs scenarios as real sessions through the normal pipeline and scores what they did.

Each run is submitted with `session_submit` (as the alerts API does), dispatched and investigated by Celery
tasks on whatever workers serve the run's configuration: an in-process worker (`in_process_worker`, the
same thread worker `manage.py serve` runs) or external `celery -A tarsy worker` processes started with
`TARSY_CONFIG_DIR` set to the run's configuration directory. The runner keeps `concurrency` sessions in
flight and reads each finished session's rows to score it.

In an action scenario the runner is also the approver: each proposal is decided through the service a person's
approval goes through (`tarsy.pipeline.actions.decisions.action_decide`, as `runconfig.APPROVER`): approved when it
is the proposal the scenario expects next, rejected otherwise or when the scenario expects a rejection. Two runs of
one action scenario never overlap (they share the fixture servers' state file, cleared before each).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from uuid import UUID

from django.db import close_old_connections

from tarsy.errors import ServiceError
from tarsy.models import (
    TERMINAL_SESSION_STATUSES,
    ActionProposal,
    AlertSession,
    LLMInteraction,
    MCPInteraction,
    ProposalStatus,
    TimelineEvent,
)
from tarsy.pipeline.actions.decisions import action_decide
from tarsy.services.intake.alerts import session_submit
from tarsy.services.sessions import session_cancel

from .judge import Judgement, judge
from .memories import load_memories
from .runconfig import APPROVER, RunPlan, ScenarioPlan, state_file
from .scoring import Call, Observation, Proposal, Score, expected_next, score

POLL_INTERVAL_S = 0.1  # sessions take seconds; a tenth of that keeps wall-time figures honest
AUTHOR = "eval"
INVESTIGATION_CALLS = ("iteration", "forced_conclusion", "synthesis")


@dataclass
class RunResult:
    plan: ScenarioPlan
    attempt: int  # 1..repeat
    session_id: str
    observation: Observation
    score: Score
    wall_s: float
    judgement: Judgement | None = None  # with --judge: the LLM judge's verdict beside the deterministic one

    @property
    def scenario(self) -> str:
        return self.plan.scenario.name


def _evidence_ids(session_id: UUID) -> dict[tuple[str, str, str], list[str]]:
    """The evidence ids of the session's tool results, per (execution, server, tool), in the order they came: the
    k-th belongs to the k-th call of that tool by that execution."""
    ids: dict[tuple[str, str, str], list[str]] = {}
    for execution_id, meta in TimelineEvent.objects.filter(session_id=session_id, event_type="tool_result").order_by(
            "id").values_list("execution_id", "metadata"):
        meta = meta or {}
        ids.setdefault((str(execution_id), meta.get("server_name", ""), meta.get("tool_name", "")), []).append(
            meta.get("evidence_id") or "")
    return ids


def _logical(servers: dict[str, str], write_servers: dict[str, str] | None) -> dict[str, str]:
    """Runtime server name → the scenario's (a write-mode twin answers to its server's name)."""
    return {runtime: name for mapping in (servers, write_servers or {}) for name, runtime in mapping.items()}


def _proposal(row: ActionProposal, logical: dict[str, str]) -> Proposal:
    ended = row.outcome if row.status == ProposalStatus.EXECUTED else str(row.status)
    return Proposal(logical.get(row.server, row.server), row.tool, row.arguments or {}, row.justification, ended)


def observe(session_id: str, servers: dict[str, str], write_servers: dict[str, str] | None = None) -> Observation:
    """The session's outcome, tool calls (server names mapped back to the scenario's, with their evidence ids),
    action proposals and LLM usage; superseded attempts' calls are left out (the run went on without them), their
    tokens are not (they were spent)."""
    session = AlertSession.all_objects.select_related("counters").get(id=session_id)
    logical = _logical(servers, write_servers)
    made = MCPInteraction.objects.filter(session_id=session.id, superseded=False).order_by("created_at", "id")
    evidence = _evidence_ids(session.id)
    calls = []
    for m in made:
        ids = evidence.get((str(m.execution_id), m.server, m.tool)) or []
        calls.append(Call(logical.get(m.server, m.server), m.tool, m.arguments or {}, m.success, m.error_message,
                          m.result, ids.pop(0) if ids else ""))
    iterations = LLMInteraction.objects.filter(
        session_id=session.id, interaction_type__in=INVESTIGATION_CALLS, superseded=False).exclude(
        execution__stage__kind="chat").count()
    proposals = [_proposal(r, logical) for r in ActionProposal.objects.filter(session_id=session.id)]
    return Observation(status=session.status, error=session.error_message, final_analysis=session.final_analysis,
                       calls=calls, iterations=iterations, tokens=session.counters.total_tokens,
                       alert=session.alert_data,
                       proposals=proposals)


def approve_pending(in_flight: dict[str, ScenarioPlan]) -> int:
    """Decide the pending proposals of the sessions in flight, as the scenario expects; returns how many."""
    decided = 0
    if not in_flight:
        return decided
    for row in ActionProposal.objects.filter(session_id__in=list(in_flight), status=ProposalStatus.PENDING):
        plan = in_flight[str(row.session_id)]
        logical = _logical(plan.servers, plan.write_servers)
        before = ActionProposal.objects.filter(session_id=row.session_id, created_at__lt=row.created_at).count()
        spec = expected_next(plan.scenario.expect, before, _proposal(row, logical))
        approve = spec is not None and spec.outcome != "rejected"
        comment = "as the scenario expects" if spec is not None else "not the action the scenario expects"
        try:
            action_decide(proposal_id=row.id, approve=approve, identity=APPROVER, groups=set(), comment=comment)
        except ServiceError:
            continue  # expired or ended meanwhile: the session goes on without it
        decided += 1
    return decided


def _rejected(plan: ScenarioPlan, attempt: int, exc: ServiceError) -> RunResult:
    obs = Observation(status="rejected", error=f"{exc}: {getattr(exc, 'detail', '')}", final_analysis="", calls=[],
                      iterations=0, tokens=0)
    return RunResult(plan, attempt, "", obs, score(plan.scenario.expect, obs), 0.0)


def _cancel(session_id: str) -> None:
    try:
        session_cancel(session_id=session_id)
    except ServiceError:
        pass  # it finished meanwhile


def run(plan: RunPlan, *, repeat: int = 1, concurrency: int = 4, run_timeout: float = 960.0,
        on_result: Callable[[RunResult], None] | None = None, judge_provider: str = "") -> list[RunResult]:
    """Run every scenario `repeat` times, `concurrency` sessions at a time; results in completion order.
    A session not finished within `run_timeout` seconds of its submission is scored as it stands (a fail);
    with `judge_provider`, each finished session is also judged by that LLM (evals.judge). The scenarios' memory
    fixtures are loaded first (evals.memories)."""
    load_memories(list({id(p.scenario): p.scenario for p in plan.plans}.values()))
    pending = [(p, attempt) for p in plan.plans for attempt in range(1, repeat + 1)]
    pending.reverse()
    in_flight: dict[str, tuple[ScenarioPlan, int, float]] = {}
    results: list[RunResult] = []

    def finish(result: RunResult) -> None:
        if judge_provider and result.session_id:
            result.judgement = judge(result.session_id, judge_provider)
        results.append(result)
        if on_result:
            on_result(result)

    def startable() -> int | None:
        """The next pending run to start: not an action scenario with a run in flight (they share a state file)."""
        acting = {p.scenario.name for p, _, _ in in_flight.values() if p.scenario.acts}
        return next((i for i in range(len(pending) - 1, -1, -1) if pending[i][0].scenario.name not in acting), None)

    try:
        while pending or in_flight:
            while pending and len(in_flight) < concurrency and (index := startable()) is not None:
                scenario_plan, attempt = pending.pop(index)
                if scenario_plan.scenario.acts:
                    state_file(scenario_plan.scenario).unlink(missing_ok=True)
                alert = scenario_plan.scenario.alert
                try:
                    session = session_submit(data=alert.data, alert_type=scenario_plan.alert_type,
                                             chain_id=scenario_plan.chain_id, runbook=alert.runbook,
                                             mcp=scenario_plan.mcp_selection, author=AUTHOR)
                except ServiceError as exc:
                    finish(_rejected(scenario_plan, attempt, exc))
                    continue
                in_flight[str(session.id)] = (scenario_plan, attempt, time.monotonic())
            time.sleep(POLL_INTERVAL_S)
            approve_pending({sid: p for sid, (p, _, _) in in_flight.items() if p.scenario.acts})
            terminal = AlertSession.all_objects.filter(id__in=list(in_flight), status__in=TERMINAL_SESSION_STATUSES)
            now = time.monotonic()
            overdue = {sid for sid, (_, _, started) in in_flight.items() if now - started > run_timeout}
            for session_id in sorted({str(s) for s in terminal.values_list("id", flat=True)} | overdue):
                scenario_plan, attempt, started = in_flight.pop(session_id)
                obs = observe(session_id, scenario_plan.servers, scenario_plan.write_servers)
                if obs.status not in TERMINAL_SESSION_STATUSES:
                    _cancel(session_id)
                    obs.error = f"did not finish within {run_timeout:.0f}s"
                finish(RunResult(scenario_plan, attempt, session_id, obs, score(scenario_plan.scenario.expect, obs),
                                 time.monotonic() - started))
    finally:
        close_old_connections()
    return results


@contextmanager
def in_process_worker(concurrency: int) -> Iterator[None]:
    """The embedded worker (threads) and periodic jobs of `manage.py serve`, for the length of a run."""
    from agents.mcp.pool import shutdown_pool
    from tarsy.embedded import EmbeddedWorker, PeriodicJobs

    worker = EmbeddedWorker(concurrency=concurrency + 2)  # + dispatch and finish tasks beside the iterations
    periodic = PeriodicJobs()
    worker.start()
    periodic.start()
    try:
        yield
    finally:
        periodic.stop()
        worker.stop()
        shutdown_pool()
