"""Prometheus metrics: web's /metrics, and each worker's own endpoint.

Counters and histograms are incremented where the work happens (web: submissions, WebSocket connections, triage time
to claim and resolve, action decisions; workers: iterations, action proposals and outcomes, LLM and MCP calls, task
queue wait, terminal statuses). A web or worker container runs several processes (uvicorn workers, Celery's prefork
children), which share their values through PROMETHEUS_MULTIPROC_DIR (prometheus_client's multiprocess mode: one mmap
file per process, summed at scrape). Web serves them at /metrics; a worker's parent process serves its children's at
TARSY_METRICS_PORT (`serve_worker_metrics`), because containers share no directory and a child cannot own a port —
children come and go. The session gauges (active, queued, by status, by triage state), the outbox backlog and the
pending actions are read from the database at scrape time by web only, so they are right cluster-wide and counted once.

/metrics needs no login — like /health it is for scrapers and probes, which carry no user
credentials, and it holds no alert or session content (only counts, provider/model/server/tool names).
Keep it off the public ingress if those names are sensitive.
"""

from __future__ import annotations

import logging
import os
import time

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily

log = logging.getLogger("tarsy.metrics")
MULTIPROC_DIR = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
if MULTIPROC_DIR:  # before the first metric opens its file there: a fresh tmpfs or emptyDir has no such folder
    os.makedirs(MULTIPROC_DIR, exist_ok=True)
METRICS_PORT_ENV = "TARSY_METRICS_PORT"  # the worker endpoint and `manage.py serve_metrics`
ENQUEUED_AT_HEADER = "tarsy_enqueued_at"

SESSIONS_SUBMITTED = Counter("tarsy_sessions_submitted_total", "Alerts accepted", ["alert_type"])
ALERTS_ATTACHED = Counter("tarsy_alerts_attached_total", "Alerts that joined an existing session instead of "
                          "starting one (occurrence: a repeat; related: another alert of its group)", ["kind"])
SESSIONS_TERMINAL = Counter("tarsy_sessions_terminal_total", "Sessions that reached a terminal status", ["status"])
ITERATION_SECONDS = Histogram("tarsy_iteration_duration_seconds", "Agent iteration duration", ["strategy"],
                              buckets=(0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600))
LLM_CALLS = Counter("tarsy_llm_calls_total", "LLM calls", ["provider", "model", "outcome"])
LLM_ERRORS = Counter("tarsy_llm_errors_total", "Failed LLM calls", ["provider", "model"])
LLM_TOKENS = Counter("tarsy_llm_tokens_total", "LLM tokens (kind: input, output, thinking; cached: part of input)",
                     ["provider", "model", "kind"])
LLM_COST = Counter("tarsy_llm_cost_usd_total", "Estimated USD of priced LLM calls", ["provider", "model"])
LLM_UNPRICED = Counter("tarsy_llm_unpriced_calls_total", "LLM calls whose model has no price", ["provider", "model"])
LLM_SECONDS = Histogram("tarsy_llm_call_duration_seconds", "LLM call duration", ["provider", "model"],
                        buckets=(0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320))
MCP_CALLS = Counter("tarsy_mcp_calls_total", "MCP tool calls", ["server", "tool", "outcome"])
MCP_ERRORS = Counter("tarsy_mcp_errors_total", "Failed MCP tool calls", ["server", "tool"])
MCP_SECONDS = Histogram("tarsy_mcp_call_duration_seconds", "MCP call duration", ["server", "tool"])
TASK_QUEUE_WAIT = Histogram("tarsy_task_queue_wait_seconds", "Time a task waited in the broker for a worker",
                            ["task"], buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300))
TASKS = Counter("tarsy_tasks_total", "Celery tasks run by workers", ["task", "outcome"])
SLACK_CALLS = Counter("tarsy_slack_calls_total", "Slack Web API calls by outcome (ok, error, rate_limited, "
                      "unreachable)", ["method", "outcome"])
SLACK_DROPPED = Counter("tarsy_slack_dropped_total", "Slack messages given up on after bounded retries", ["reason"])
# Minutes to days: a claim within the shift, a resolution up to a week later (a hand-over or two).
TRIAGE_BUCKETS = (60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 259200, 604800)
TRIAGE_TIME_TO_CLAIM = Histogram("tarsy_triage_time_to_claim_seconds", "From needs_review to its first owner "
                                 "(claim or assign)", buckets=TRIAGE_BUCKETS)
TRIAGE_TIME_TO_RESOLVE = Histogram("tarsy_triage_time_to_resolve_seconds", "From needs_review to resolved, by "
                                   "resolution (auto-dismissals not counted)", ["resolution"], buckets=TRIAGE_BUCKETS)
ACTION_TRANSITIONS = Counter("tarsy_action_proposals_total", "Action proposals by transition (proposed, approved, "
                             "rejected, expired, withdrawn, executed; outcome: an execution's verified, not_verified "
                             "or failed)", ["server", "tool", "transition", "outcome"])
# Seconds to a working day: a proposal waits for a person, possibly through the night.
ACTION_APPROVAL_WAIT = Histogram("tarsy_action_approval_wait_seconds", "From proposal to its decision (approved, "
                                 "rejected, expired, withdrawn)", ["decision"],
                                 buckets=(10, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400))
WS_CONNECTIONS = Gauge("tarsy_ws_connections_active", "Open WebSocket connections", multiprocess_mode="livesum")


def observe_llm_call(*, provider: str, model: str, success: bool, duration_ms: int, usage, cost_usd=None) -> None:
    """One recorded LLM interaction (any kind: iteration, summary, chat…); `cost_usd` None: no price."""
    outcome = "success" if success else "error"
    LLM_CALLS.labels(provider, model, outcome).inc()
    if not success:
        LLM_ERRORS.labels(provider, model).inc()
    LLM_SECONDS.labels(provider, model).observe(max(duration_ms, 0) / 1000)
    for kind in ("input", "output", "thinking", "cached"):
        value = getattr(usage, f"{kind}_tokens", 0) or 0
        if value:
            LLM_TOKENS.labels(provider, model, kind).inc(value)
    if cost_usd is None:
        LLM_UNPRICED.labels(provider, model).inc()
    elif cost_usd:
        LLM_COST.labels(provider, model).inc(float(cost_usd))


def observe_mcp_call(*, server: str, tool: str, success: bool, duration_ms: int) -> None:
    MCP_CALLS.labels(server, tool, "success" if success else "error").inc()
    if not success:
        MCP_ERRORS.labels(server, tool).inc()
    MCP_SECONDS.labels(server, tool).observe(max(duration_ms, 0) / 1000)


def observe_task_start(*, task: str, enqueued_at: float | None, eta: object) -> None:
    """Queue wait of a task that a worker starts: how long work waits for a free process. A task with an ETA
    (a retry's countdown) waited on purpose and is not counted."""
    if enqueued_at is not None and not eta:
        TASK_QUEUE_WAIT.labels(task).observe(max(time.time() - enqueued_at, 0.0))


def observe_task_end(*, task: str, state: str | None) -> None:
    TASKS.labels(task, (state or "unknown").lower()).inc()


class SessionStateCollector:
    """Active, queued and per-status session counts, from the database at scrape time."""

    def collect(self):
        from django.db.models import Count

        from tarsy.models import ACTIVE_SESSION_STATUSES, AlertSession, SessionStatus

        counts = dict(AlertSession.objects.values_list("status").annotate(n=Count("id")))
        by_status = GaugeMetricFamily("tarsy_sessions", "Sessions (not deleted) by status", labels=["status"])
        for status in SessionStatus:
            by_status.add_metric([status.value], counts.get(status.value, 0))
        yield by_status
        yield GaugeMetricFamily("tarsy_sessions_active", "Sessions being investigated",
                                value=sum(counts.get(s, 0) for s in ACTIVE_SESSION_STATUSES))
        yield GaugeMetricFamily("tarsy_sessions_queued", "Sessions waiting for a slot",
                                value=counts.get(SessionStatus.PENDING, 0))


class TriageStateCollector:
    """Finished sessions by triage state (needs_review, in_progress, resolved), from the database at scrape time:
    one indexed GROUP BY, right cluster-wide whichever process changed them."""

    def collect(self):
        from django.db.models import Count

        from tarsy.models import AlertSession, TriageStatus

        counts = dict(AlertSession.objects.exclude(triage_status="").values_list("triage_status")
                      .annotate(n=Count("id")).order_by())
        family = GaugeMetricFamily("tarsy_triage_sessions", "Finished sessions by triage state", labels=["state"])
        for state in TriageStatus:
            family.add_metric([state.value], counts.get(state.value, 0))
        yield family


class PendingActionsCollector:
    """Action proposals waiting for a person, by server and tool, from the database at scrape time."""

    def collect(self):
        from django.db.models import Count

        from tarsy.models import ActionProposal, ProposalStatus

        family = GaugeMetricFamily("tarsy_action_proposals_pending", "Action proposals waiting for a decision",
                                   labels=["server", "tool"])
        rows = (ActionProposal.objects.filter(status=ProposalStatus.PENDING).values_list("server", "tool")
                .annotate(n=Count("id")).order_by())
        for server, tool, count in rows:
            family.add_metric([server, tool], count)
        yield family


class OutboxCollector:
    """Decided tasks the broker has not taken yet (tarsy/relay.py), from the database at scrape time: above zero
    for more than a few seconds, the broker is unreachable."""

    def collect(self):
        from tarsy.services.outbox import outbox_backlog

        yield GaugeMetricFamily("tarsy_outbox_tasks", "Decided tasks waiting in the outbox for the broker",
                                value=outbox_backlog())


def process_registry():
    """This container's process metrics: all its processes' in multiprocess mode, else this process's."""
    if not MULTIPROC_DIR:
        return REGISTRY
    from prometheus_client import multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def render() -> tuple[bytes, str]:
    """The exposition text: process (or multiprocess) metrics, then the database-backed gauges."""
    state = CollectorRegistry(auto_describe=False)
    state.register(SessionStateCollector())
    state.register(TriageStateCollector())
    state.register(OutboxCollector())
    state.register(PendingActionsCollector())
    return generate_latest(process_registry()) + generate_latest(state), CONTENT_TYPE_LATEST


def serve_worker_metrics(*, forking_pool: bool) -> int | None:
    """Start the worker's metrics endpoint (a daemon thread of the parent process) when
    TARSY_METRICS_PORT is set; returns the port. With a forking pool the children's values reach the
    parent only through PROMETHEUS_MULTIPROC_DIR, so its absence is logged loudly."""
    from prometheus_client import start_http_server

    port = os.environ.get(METRICS_PORT_ENV, "").strip()
    if not port:
        return None
    if forking_pool and not MULTIPROC_DIR:
        log.error("%s is set but PROMETHEUS_MULTIPROC_DIR is not: the prefork children's LLM, MCP and iteration "
                  "metrics will be missing from the worker's endpoint", METRICS_PORT_ENV)
    addr = os.environ.get("TARSY_METRICS_ADDR", "0.0.0.0")  # scraped from other pods
    try:
        start_http_server(int(port), addr=addr, registry=process_registry())
    except OSError as exc:  # the port is taken (two workers on one host with one setting): investigations go on
        log.error("worker metrics endpoint not started on %s:%s: %s", addr, port, exc)
        return None
    log.info("worker metrics on %s:%s", addr, port)
    return int(port)


def forget_process(pid: int) -> None:
    """A prefork child exits: drop its live gauges from the shared directory (its counters stay counted)."""
    if MULTIPROC_DIR:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def metrics_view(request):
    from django.http import HttpResponse

    body, content_type = render()
    return HttpResponse(body, content_type=content_type)
