"""Per-task time limits in worker pools that drop Celery's: watched and reported, never forced.

Celery's prefork pool enforces `soft_time_limit` and `time_limit` with signals in its child processes; the
threads and solo pools silently ignore both (PITFALLS.md). Nothing can stop a thread from outside with a public
API: CPython's asynchronous exception lands only between bytecodes (a thread blocked in C never sees it), a retry
loop may swallow it, and it may land in the pool's own code as the task ends. TARSy makes a late thread harmless
instead of stopping it:

- **the soft limit is the iteration's own deadline:** the LLM stream and every MCP call are abandoned at it
  (tarsy.pipeline.execution_context), and the step ends as a timeout.
- **past the hard limit, the attempt has outlived its lease:** the sweeper gives the iteration to another task,
  and the claim's fence drops every write the late attempt makes (tarsy.services.recorder). The watchdog reports
  such a task once, with where its thread is, and leaves it; the process goes on serving with its other threads.
  No process exit either: it would take with it the tasks the process had received and not started.
- **a suspended process is not a stuck one:** a process that was stopped (SIGSTOP, a paused VM) finds on waking
  that its clock ran on; the watchdog sees the gap between its rounds and moves its tasks' limits by it, so the
  process keeps its tasks and the messages the broker delivered meanwhile. Leases that ran out meanwhile are the
  fence's business, as for any late attempt.

`check` is one round, every `TICK_S`; its clock is monotonic, which runs on while the process is stopped.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

TICK_S = 0.25
SUSPENDED_AFTER_S = 5.0  # a round this late means the process was not running (rounds are 0.25 s apart)


@dataclass
class _Running:
    thread_id: int
    name: str
    hard_at: float | None
    reported: bool = False


def _where(thread_id: int) -> str:
    """The thread's stack (code locations only), so a log says where an overdue task was stuck."""
    frame = sys._current_frames().get(thread_id)
    return "".join(traceback.format_stack(frame, limit=12)) if frame is not None else "(thread gone)"


class Watchdog:
    """The tasks running in this process and their hard limits."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._running: dict[str, _Running] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self._last_round = clock()

    def task_started(self, task_id: str, name: str, *, hard: float | None) -> None:
        """Called in the task's own thread as it starts; `hard`: its hard limit in seconds (None: not set)."""
        with self._lock:
            self._running[task_id] = _Running(threading.get_ident(), name,
                                              self._clock() + hard if hard else None)

    def task_ended(self, task_id: str) -> None:
        with self._lock:
            task = self._running.pop(task_id, None)
        if task is not None and task.reported:
            log.warning("task %s (%s) ended past its hard limit; whatever it wrote late was fenced", task.name,
                        task_id)

    def overdue(self) -> list[str]:
        """Ids of the tasks past their hard limit, still running."""
        with self._lock:
            return [task_id for task_id, task in self._running.items() if task.reported]

    def check(self) -> None:
        now = self._clock()
        away, self._last_round = now - self._last_round, now
        with self._lock:
            if away > SUSPENDED_AFTER_S:
                self._shift(away)
            late = [(task_id, task) for task_id, task in self._running.items()
                    if not task.reported and task.hard_at is not None and now >= task.hard_at]
            for _, task in late:
                task.reported = True
        for task_id, task in late:
            log.error("task %s (%s) passed its hard time limit: its lease has run out and another task may take "
                      "its work over (the fence drops what this one writes); it is left to its thread, at\n%s",
                      task.name, task_id, _where(task.thread_id))

    def _shift(self, away: float) -> None:
        """The process did not run for `away` seconds: neither did its tasks."""
        log.warning("this process was suspended for %.0f s: the limits of its %d running task(s) move by as much",
                    away, len(self._running))
        for task in self._running.values():
            if task.hard_at is not None:
                task.hard_at += away

    def start(self) -> threading.Thread:
        def loop() -> None:
            while True:
                time.sleep(TICK_S)
                try:
                    self.check()
                except Exception:  # the watchdog must outlive anything it watches
                    log.exception("watchdog round failed")

        thread = threading.Thread(target=loop, name="tarsy-watchdog", daemon=True)
        thread.start()
        return thread
