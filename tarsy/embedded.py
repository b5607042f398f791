"""Embedded mode: one process runs the ASGI server, a Celery worker (threads) and the periodic jobs.

Same tasks and code paths as production; only the broker (`memory://`), the
database (SQLite) and the live-event transport differ. The worker runs in
a thread, so it hands events to the server's event loop (streaming/fanout.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time

from celery.worker import WorkController

from tarsy.celery import app, hold_time_limits
from tarsy.streaming import publisher

log = logging.getLogger(__name__)

EMBEDDED_WORKER_THREADS = int(os.environ.get("TARSY_WORKER_THREADS", "8"))  # I/O-bound: LLM and tool waits


class EmbeddedWorker:
    """A Celery WorkController in a background thread (no signal handlers: not the main thread)."""

    def __init__(self, concurrency: int = EMBEDDED_WORKER_THREADS):
        hold_time_limits()  # the threads pool drops Celery's limits; the watchdog reports overdue tasks
        self.controller = WorkController(app=app, pool_cls="threads", concurrency=concurrency, loglevel="WARNING",
                                         without_heartbeat=True, without_mingle=True, without_gossip=True,
                                         queues=[app.conf.task_default_queue], hostname=f"embedded@{os.getpid()}")
        self.thread = threading.Thread(target=self.controller.start, name="tarsy-worker", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        try:
            self.controller.stop(in_sighandler=False)
        except Exception:  # shutting down anyway
            log.debug("worker stop failed", exc_info=True)
        self.thread.join(timeout=10)


class PeriodicJobs:
    """Enqueues the beat schedule's tasks at their intervals (celery beat's job, without its schedule file)."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="tarsy-periodic", daemon=True)

    def _run(self) -> None:
        schedule = app.conf.beat_schedule
        due = {name: time.monotonic() + 1.0 for name in schedule}
        last_run = {name: app.now() for name in schedule}  # cron entries (checks) are due from their next time
        while not self._stop.is_set():
            now = time.monotonic()
            for name, entry in schedule.items():
                if isinstance(entry["schedule"], (int, float)):
                    if now >= due[name]:
                        app.send_task(entry["task"])
                        due[name] = now + float(entry["schedule"])
                elif entry["schedule"].is_due(last_run[name]).is_due:
                    app.send_task(entry["task"], args=entry.get("args", ()))
                    last_run[name] = app.now()
            self._stop.wait(0.5)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=5)


def bind_publisher_to_running_loop() -> None:
    """Call from inside the server's loop before serving."""
    publisher.use_event_loop(asyncio.get_running_loop())
