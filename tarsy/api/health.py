"""GET /health: database, broker, workers, configuration — 200 healthy, 503 not."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import JsonResponse

from tarsy.config import ConfigError, get_config

WORKER_REPLY_TIMEOUT_S = 1.0  # a probe must answer quickly; a worker slower than this is as good as absent


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


def _workers() -> dict:
    """Workers that consume our task queue: a worker on another queue would never run our tasks."""
    from tarsy.celery import app

    if settings.EMBEDDED:
        return {"status": "ok", "mode": "in-process"}
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    try:
        replies = app.control.inspect(timeout=WORKER_REPLY_TIMEOUT_S).active_queues() or {}
    except Exception as exc:
        return {"status": "error", "error": str(exc), "count": 0, "queue": queue}
    names = sorted(name for name, queues in replies.items() if any(q.get("name") == queue for q in queues or []))
    result = {"status": "ok" if names else "error", "count": len(names), "workers": names, "queue": queue}
    if not names:
        result["error"] = f"no live worker consumes queue {queue!r}"
    return result


def health(request):
    checks = {"database": _database(), "broker": _broker(), "workers": _workers()}
    try:
        from agents.mcp.health import known_problems

        config = get_config()
        warnings = config.warnings() + known_problems(config)
        checks["config"] = {"status": "ok"}
    except ConfigError as exc:
        warnings = exc.problems
        checks["config"] = {"status": "error", "error": "invalid configuration"}
    healthy = all(c["status"] == "ok" for c in checks.values())
    return JsonResponse({"status": "healthy" if healthy else "unhealthy", "checks": checks, "warnings": warnings},
                        status=200 if healthy else 503)
