"""The watchdog that holds time limits in pools that drop Celery's, on real threads (no worker needed)."""

from __future__ import annotations

import threading
import time

import pytest
from celery.exceptions import SoftTimeLimitExceeded

from tarsy.watchdog import EXIT_CODE, Watchdog

pytestmark = pytest.mark.timeout(30)


def _task(watchdog: Watchdog, task_id: str, body, *, soft=None, hard=None) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        watchdog.task_started(task_id, task_id, soft=soft, hard=hard)
        try:
            body()
            outcome["result"] = "finished"
        except SoftTimeLimitExceeded:
            outcome["result"] = "soft limit"
        finally:
            watchdog.task_ended(task_id)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _swallow(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            _spin(0.01)
        except Exception:  # a retry loop that eats everything, the soft limit included
            continue


class _Process:
    def __init__(self):
        self.stopped, self.exited = 0, []

    def watchdog(self) -> Watchdog:
        return Watchdog(stop=lambda: setattr(self, "stopped", self.stopped + 1), exit=self.exited.append)


def _rounds(watchdog: Watchdog, until, seconds: float = 10) -> None:
    end = time.monotonic() + seconds
    while not until() and time.monotonic() < end:
        watchdog.check()
        time.sleep(0.05)


def test_a_busy_task_past_its_soft_limit_gets_the_soft_limit_exception_in_its_own_thread():
    process = _Process()
    watchdog = process.watchdog()
    busy, busy_outcome = _task(watchdog, "busy", lambda: _spin(20), soft=0.3, hard=10)
    quick, quick_outcome = _task(watchdog, "quick", lambda: _spin(0.5), soft=5, hard=10)
    started = time.monotonic()
    _rounds(watchdog, lambda: not busy.is_alive())
    busy.join(1)
    quick.join(5)
    assert busy_outcome == {"result": "soft limit"}
    assert time.monotonic() - started < 5
    assert quick_outcome == {"result": "finished"}
    assert (process.stopped, process.exited) == (0, [])


def test_a_task_that_swallows_its_soft_limit_stops_the_process_once_the_others_end():
    process = _Process()
    watchdog = process.watchdog()
    stuck, _ = _task(watchdog, "stuck", lambda: _swallow(20), soft=0.2, hard=0.6)
    other, other_outcome = _task(watchdog, "other", lambda: time.sleep(1.5), soft=5, hard=10)
    _rounds(watchdog, lambda: process.stopped)
    assert process.stopped == 1 and process.exited == []  # stops taking tasks, lets the other one finish
    _rounds(watchdog, lambda: process.exited)
    assert other_outcome == {"result": "finished"} and not other.is_alive()
    assert process.exited == [EXIT_CODE] and stuck.is_alive()
    assert process.stopped == 1


def test_a_task_without_limits_is_never_stopped():
    process = _Process()
    watchdog = process.watchdog()
    thread, outcome = _task(watchdog, "free", lambda: _spin(0.8))
    _rounds(watchdog, lambda: not thread.is_alive())
    assert outcome == {"result": "finished"} and (process.stopped, process.exited) == (0, [])


def test_a_soft_limit_decided_as_the_task_ends_never_lands_after_it():
    """Tasks that end about when their soft limit passes: the exception lands inside the task (or as it ends) or
    is withdrawn, never in the pool's code that runs once the task has ended."""
    watchdog = Watchdog(stop=lambda: None, exit=lambda code: None)
    landed, done = [], threading.Event()

    def worker() -> None:
        for n in range(300):
            watchdog.task_started(f"t{n}", "t", soft=0.002, hard=None)
            try:
                _spin(0.002)
            except SoftTimeLimitExceeded:
                pass  # the task's own timeout path
            try:
                watchdog.task_ended(f"t{n}")
            except SoftTimeLimitExceeded:
                pass  # landed while the task was ending, as Celery's own soft limit can (its signal handler)
            try:
                _spin(0.002)  # the pool's own code after the task
            except SoftTimeLimitExceeded:
                landed.append(n)
        done.set()

    thread = threading.Thread(target=worker)
    thread.start()
    while not done.is_set():
        watchdog.check()
    thread.join(5)
    assert landed == []


def test_inside_the_web_process_a_task_past_its_hard_limit_is_reported_once_and_nothing_stops():
    process = _Process()
    watchdog = Watchdog(stop=lambda: setattr(process, "stopped", 1), exit=process.exited.append, stops_process=False)
    stuck, _ = _task(watchdog, "stuck", lambda: _swallow(3), soft=0.1, hard=0.3)
    _rounds(watchdog, lambda: not stuck.is_alive())
    assert (process.stopped, process.exited) == (0, []) and not watchdog.stopping
