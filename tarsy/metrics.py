"""Prometheus metrics, served at /metrics by the web process.

Counters and histograms are incremented where the work happens (web: submissions, WebSocket
connections; workers: iterations, LLM and MCP calls, terminal statuses). Processes on one host share
them when PROMETHEUS_MULTIPROC_DIR is set for all of them (prometheus_client's multiprocess mode,
as for gunicorn/prefork); otherwise scrape each process. The session gauges (active, queued, by status)
are read from the database at scrape time, so they are right cluster-wide whatever serves /metrics.

/metrics needs no login — like /health it is for scrapers and probes, which carry no user
credentials, and it holds no alert or session content (only counts, provider/model/server/tool names).
Keep it off the public ingress if those names are sensitive.
"""

from __future__ import annotations

import os

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

SESSIONS_SUBMITTED = Counter("tarsy_sessions_submitted_total", "Alerts accepted", ["alert_type"])
ALERTS_ATTACHED = Counter("tarsy_alerts_attached_total", "Alerts that joined an existing session instead of "
                          "starting one (occurrence: a repeat; related: another alert of its group)", ["kind"])
SESSIONS_TERMINAL = Counter("tarsy_sessions_terminal_total", "Sessions that reached a terminal status", ["status"])
ITERATION_SECONDS = Histogram("tarsy_iteration_duration_seconds", "Agent iteration duration", ["strategy"],
                              buckets=(0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600))
LLM_CALLS = Counter("tarsy_llm_calls_total", "LLM calls", ["provider", "model", "outcome"])
LLM_ERRORS = Counter("tarsy_llm_errors_total", "Failed LLM calls", ["provider", "model"])
LLM_TOKENS = Counter("tarsy_llm_tokens_total", "LLM tokens", ["provider", "model", "kind"])
LLM_SECONDS = Histogram("tarsy_llm_call_duration_seconds", "LLM call duration", ["provider", "model"],
                        buckets=(0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320))
MCP_CALLS = Counter("tarsy_mcp_calls_total", "MCP tool calls", ["server", "tool", "outcome"])
MCP_ERRORS = Counter("tarsy_mcp_errors_total", "Failed MCP tool calls", ["server", "tool"])
MCP_SECONDS = Histogram("tarsy_mcp_call_duration_seconds", "MCP call duration", ["server", "tool"])
WS_CONNECTIONS = Gauge("tarsy_ws_connections_active", "Open WebSocket connections", multiprocess_mode="livesum")


def observe_llm_call(*, provider: str, model: str, success: bool, duration_ms: int, usage) -> None:
    """One recorded LLM interaction (any kind: iteration, summary, chat…)."""
    outcome = "success" if success else "error"
    LLM_CALLS.labels(provider, model, outcome).inc()
    if not success:
        LLM_ERRORS.labels(provider, model).inc()
    LLM_SECONDS.labels(provider, model).observe(max(duration_ms, 0) / 1000)
    for kind in ("input", "output", "thinking"):
        value = getattr(usage, f"{kind}_tokens", 0) or 0
        if value:
            LLM_TOKENS.labels(provider, model, kind).inc(value)


def observe_mcp_call(*, server: str, tool: str, success: bool, duration_ms: int) -> None:
    MCP_CALLS.labels(server, tool, "success" if success else "error").inc()
    if not success:
        MCP_ERRORS.labels(server, tool).inc()
    MCP_SECONDS.labels(server, tool).observe(max(duration_ms, 0) / 1000)


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


def render() -> tuple[bytes, str]:
    """The exposition text: process (or multiprocess) metrics, then the database-backed gauges."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    state = CollectorRegistry(auto_describe=False)
    state.register(SessionStateCollector())
    return generate_latest(registry) + generate_latest(state), CONTENT_TYPE_LATEST


def metrics_view(request):
    from django.http import HttpResponse

    body, content_type = render()
    return HttpResponse(body, content_type=content_type)
