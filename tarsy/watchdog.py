"""Per-task time limits held by TARSy in worker pools that drop Celery's.

Celery's prefork pool enforces `soft_time_limit` and `time_limit` with signals in its child processes; the
threads and solo pools silently ignore both (PITFALLS.md). In those pools a watchdog thread checks the running
tasks every `TICK_S` against the limits their messages carry (`task.request.timelimit`):

- **soft limit:** `SoftTimeLimitExceeded` is raised inside the overdue task's thread (CPython's documented
  `PyThreadState_SetAsyncExc`), so the task's own timeout path runs unchanged (an iteration records its
  timeout and goes on). The exception lands when the thread next runs Python code: a call blocked in C sees it
  when it returns. The in-band deadlines (LLM streams and MCP calls are abandoned at them) stay the first line.
- **hard limit:** a task still running at its hard limit cannot be stopped from inside the process. The process
  stops taking tasks (a warm shutdown: SIGTERM to itself), lets its other tasks finish or reach their own hard
  limits, then exits (`os._exit`) so its supervisor starts a fresh one. What was cut short is re-run by the
  sweeper once its lease expires; the stuck thread dies with the process, so it can write nothing late.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from celery.exceptions import SoftTimeLimitExceeded

log = logging.getLogger(__name__)

TICK_S = 0.25
EXIT_CODE = 70  # EX_SOFTWARE: the supervisor restarts the process


@dataclass
class _Running:
    thread_id: int
    name: str
    soft_at: float | None
    hard_at: float | None
    softened: bool = False


def raise_in_thread(thread_id: int, exc_type: type[BaseException]) -> bool:
    """Schedule `exc_type` to be raised in the thread; False when no such thread runs."""
    return ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc_type)) == 1


def _where(thread_id: int) -> str:
    """The thread's stack (code locations only), so a log says where an overdue task was stuck."""
    frame = sys._current_frames().get(thread_id)
    return "".join(traceback.format_stack(frame, limit=12)) if frame is not None else "(thread gone)"


class Watchdog:
    """The limits of the tasks running in this process. `check` is one round; `start` runs it every `TICK_S`."""

    def __init__(self, *, stop: Callable[[], None] | None = None, exit: Callable[[int], None] = os._exit,
                 clock: Callable[[], float] = time.monotonic, stops_process: bool = True) -> None:
        """`stops_process=False` (a worker inside the web process, embedded mode): a task past its hard limit is
        reported once and left to its thread; its lease runs out and the sweeper re-runs the iteration."""
        self._running: dict[str, _Running] = {}
        self._lock = threading.Lock()
        self._stop = stop or (lambda: os.kill(os.getpid(), signal.SIGTERM))
        self._exit = exit
        self._clock = clock
        self._stops_process = stops_process
        self._reported: set[int] = set()
        self.stopping = False

    def task_started(self, task_id: str, name: str, *, soft: float | None, hard: float | None) -> None:
        """Called in the task's own thread as it starts; limits in seconds (None: that limit is not set)."""
        now = self._clock()
        with self._lock:
            self._running[task_id] = _Running(threading.get_ident(), name, now + soft if soft else None,
                                              now + hard if hard else None)

    def task_ended(self, task_id: str) -> None:
        """Called in the task's thread as it ends. Under the lock `check` raises under, so no soft-limit exception
        is raised for the thread once its task has ended; one raised as the task ends lands there, as Celery's
        own soft limit (a signal handler) can."""
        with self._lock:
            self._running.pop(task_id, None)

    def check(self) -> None:
        now = self._clock()
        with self._lock:  # raised under the lock: never for a task `task_ended` has removed
            running = dict(self._running)
            for task_id, task in running.items():
                if task.soft_at is not None and now >= task.soft_at and not task.softened:
                    task.softened = True
                    log.warning("task %s (%s) passed its soft time limit: stopping it; it was at\n%s", task.name,
                                task_id, _where(task.thread_id))
                    raise_in_thread(task.thread_id, SoftTimeLimitExceeded)
        stuck = [t for t in running.values() if t.hard_at is not None and now >= t.hard_at]
        if not self._stops_process:
            for task in stuck:
                if id(task) not in self._reported:
                    self._reported.add(id(task))
                    log.error("task %s passed its hard time limit; it cannot be stopped and is left to its thread "
                              "(the sweeper re-runs its iteration)", task.name)
            return
        if stuck and not self.stopping:
            self.stopping = True
            log.error("task %s passed its hard time limit and cannot be stopped in this process: taking no more "
                      "tasks, exiting once the others end", ", ".join(t.name for t in stuck))
            self._stop()
        if self.stopping and len(stuck) == len(running):
            log.error("exiting with %d task(s) cut short; the sweeper re-runs them", len(stuck))
            self._exit(EXIT_CODE)

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
