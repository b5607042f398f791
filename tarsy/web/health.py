"""GET /health for load balancers and probes: one word per component, cheap enough to call every few seconds.

The endpoint is public, so it says only "ok" or "degraded" per component, and "ok", "degraded" or "unhealthy"
overall (the HTTP status is what probes read) — no error text, host names or worker
names, which stay on the authenticated system page (`checks()`). 503 when the database, the broker, every worker
or the configuration is down: the instance cannot do its work, so it should leave the load balancer; MCP servers
that fail degrade investigations without stopping them, so they report "degraded" with a 200 — as do servers
not checked yet: one that has not started is not known to work.
"""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.db import connection
from django.http import JsonResponse

from tarsy.config import ConfigError, get_config

WORKER_REPLY_TIMEOUT_S = 1.0  # a probe must answer quickly; a worker slower than this is as good as absent
# The worker probe is a broadcast every worker answers: with probes every few seconds from each load balancer and
# each replica it would keep the workers busy answering. One probe per process per window; callers share it.
WORKER_PROBE_TTL_S = 5.0
CRITICAL = ("database", "broker", "workers", "config")

_probe_lock = threading.Lock()
_probe: dict[str, tuple[float, dict]] = {}  # queue → (expires at, result)


def _database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return {"status": "ok"}
    except Exception as exc:  # report, don't raise: health must always answer
        return {"status": "error", "error": str(exc)}


def _broker() -> dict:
    if settings.EMBEDDED:
        return {"status": "ok", "url": "memory://"}
    try:
        import redis

        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2).ping()
        return {"status": "ok"}
    except Exception as exc:
        return {"status": "error", "error": str(exc)}


def worker_status() -> dict:
    """Workers that consume our task queue (a worker on another queue would never run our tasks); the probe's
    answer is reused for WORKER_PROBE_TTL_S by every caller in the process (/health, the system page, the
    warnings banner), and a caller arriving while it runs waits for it."""
    if settings.EMBEDDED:
        return {"status": "ok", "mode": "in-process"}
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    with _probe_lock:
        cached = _probe.get(queue)
        if cached is None or cached[0] <= time.monotonic():
            cached = _probe[queue] = (time.monotonic() + WORKER_PROBE_TTL_S, _probe_workers(queue))
    return dict(cached[1])


def _probe_workers(queue: str) -> dict:
    from tarsy.celery import app

    try:
        replies = app.control.inspect(timeout=WORKER_REPLY_TIMEOUT_S).active_queues() or {}
    except Exception as exc:
        return {"status": "error", "error": str(exc), "count": 0, "queue": queue}
    names = sorted(name for name, queues in replies.items() if any(q.get("name") == queue for q in queues or []))
    result = {"status": "ok" if names else "error", "count": len(names), "workers": names, "queue": queue}
    if not names:
        result["error"] = f"no live worker consumes queue {queue!r}"
    return result


def _config_and_mcp() -> tuple[dict, dict]:
    from agents.mcp.health import known_problems, not_yet_checked

    try:
        config = get_config()
    except ConfigError as exc:
        return {"status": "error", "error": "invalid configuration", "problems": exc.problems}, {"status": "ok"}
    problems = known_problems(config)  # never waits on a server: failures seen by the last background check
    if problems:
        return {"status": "ok"}, {"status": "error", "problems": problems}
    if pending := not_yet_checked(config):
        return {"status": "ok"}, {"status": "pending", "error": "not checked yet", "servers": pending}
    return {"status": "ok"}, {"status": "ok"}


def checks() -> dict[str, dict]:
    """Every component with its details (errors, worker names): for authenticated pages only."""
    result = {"database": _database(), "broker": _broker()}
    result["workers"] = worker_status() if result["broker"]["status"] == "ok" else {
        "status": "error", "error": "the broker is unreachable", "count": 0}
    result["config"], result["mcp"] = _config_and_mcp()
    return result


def health(request):
    components = {name: "ok" if check["status"] == "ok" else "degraded" for name, check in checks().items()}
    serving = all(components[name] == "ok" for name in CRITICAL)
    status = "ok" if all(v == "ok" for v in components.values()) else "degraded" if serving else "unhealthy"
    return JsonResponse({"status": status, "checks": components}, status=200 if serving else 503)
