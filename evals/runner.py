"""Runs scenarios as real sessions through the normal pipeline and scores what they did.

Each run is submitted with `session_submit` (as the alerts API does), dispatched and investigated by Celery
tasks on whatever workers serve the run's configuration: an in-process worker (`in_process_worker`, the
same thread worker `manage.py serve` runs) or external `celery -A tarsy worker` processes started with
`TARSY_CONFIG_DIR` set to the run's configuration directory. The runner keeps `concurrency` sessions in
flight and reads each finished session's rows to score it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import close_old_connections

from tarsy.models import TERMINAL_SESSION_STATUSES, AlertSession, LLMInteraction, MCPInteraction
from tarsy.services.errors import ServiceError
from tarsy.services.sessions import session_cancel, session_submit

from .judge import Judgement, judge
from .memories import load_memories
from .runconfig import RunPlan, ScenarioPlan
from .scoring import Call, Observation, Score, score

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


def observe(session_id: str, servers: dict[str, str]) -> Observation:
    """The session's outcome, tool calls (server names mapped back to the scenario's) and LLM usage; superseded
    attempts' calls are left out (the run went on without them), their tokens are not (they were spent)."""
    session = AlertSession.all_objects.get(id=session_id)
    logical = {runtime: name for name, runtime in servers.items()}
    made = MCPInteraction.objects.filter(session_id=session_id, superseded=False).order_by("created_at", "id")
    calls = [Call(logical.get(m.server, m.server), m.tool, m.arguments or {}, m.success, m.error_message, m.result)
             for m in made]
    iterations = LLMInteraction.objects.filter(
        session_id=session_id, interaction_type__in=INVESTIGATION_CALLS, superseded=False).exclude(
        execution__stage__kind="chat").count()
    return Observation(status=session.status, error=session.error_message, final_analysis=session.final_analysis,
                       calls=calls, iterations=iterations, tokens=session.total_tokens, alert=session.alert_data)


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

    try:
        while pending or in_flight:
            while pending and len(in_flight) < concurrency:
                scenario_plan, attempt = pending.pop()
                alert = scenario_plan.scenario.alert
                try:
                    session = session_submit(data=alert.data, alert_type=scenario_plan.alert_type,
                                             runbook=alert.runbook, mcp=scenario_plan.mcp_selection, author=AUTHOR)
                except ServiceError as exc:
                    finish(_rejected(scenario_plan, attempt, exc))
                    continue
                in_flight[str(session.id)] = (scenario_plan, attempt, time.monotonic())
            time.sleep(POLL_INTERVAL_S)
            terminal = AlertSession.all_objects.filter(id__in=list(in_flight), status__in=TERMINAL_SESSION_STATUSES)
            now = time.monotonic()
            overdue = {sid for sid, (_, _, started) in in_flight.items() if now - started > run_timeout}
            for session_id in sorted({str(s) for s in terminal.values_list("id", flat=True)} | overdue):
                scenario_plan, attempt, started = in_flight.pop(session_id)
                obs = observe(session_id, scenario_plan.servers)
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
