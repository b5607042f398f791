"""The watchdog of pools that drop Celery's time limits: it reports a task past its hard limit and never
interrupts it, and a process that was suspended does not count the time it was away (no worker needed)."""

from __future__ import annotations

import logging
import threading

import pytest

from tarsy.watchdog import SUSPENDED_AFTER_S, TICK_S, Watchdog

pytestmark = pytest.mark.timeout(30)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def run(self, watchdog: Watchdog, seconds: float) -> None:
        """The watchdog's rounds over `seconds` of a process that keeps running."""
        end = self.now + seconds
        while self.now < end:
            self.now += TICK_S
            watchdog.check()


def test_a_task_past_its_hard_limit_is_reported_once_and_left_to_run_to_its_end(caplog):
    clock = Clock()
    watchdog = Watchdog(clock=clock)
    registered, release, outcome = threading.Event(), threading.Event(), {}

    def task() -> None:
        watchdog.task_started("stuck", "tarsy.tasks.run_iteration", hard=2)
        registered.set()
        try:
            release.wait(10)  # blocked past its hard limit, as in a wedged call
            outcome["result"] = "finished"
        except BaseException as exc:  # nothing may be raised into the task's thread
            outcome["result"] = repr(exc)
        finally:
            watchdog.task_ended("stuck")

    thread = threading.Thread(target=task)
    with caplog.at_level(logging.WARNING, logger="tarsy.watchdog"):
        thread.start()
        assert registered.wait(5)
        clock.run(watchdog, 5)
        assert watchdog.overdue() == ["stuck"]
        release.set()
        thread.join(5)
    assert outcome == {"result": "finished"}
    assert watchdog.overdue() == []
    reports = [r.getMessage() for r in caplog.records if "passed its hard time limit" in r.getMessage()]
    assert len(reports) == 1 and "release.wait" in reports[0]  # once, with where the thread was
    assert any("ended past its hard limit" in r.getMessage() for r in caplog.records)


def test_a_task_within_its_limit_or_without_one_is_never_reported():
    clock = Clock()
    watchdog = Watchdog(clock=clock)
    watchdog.task_started("quick", "t", hard=5)
    watchdog.task_started("free", "t", hard=None)
    clock.run(watchdog, 4)
    assert watchdog.overdue() == []
    watchdog.task_ended("quick")
    clock.run(watchdog, 60)
    assert watchdog.overdue() == []


def test_a_suspended_process_does_not_count_the_time_it_was_away():
    clock = Clock()
    watchdog = Watchdog(clock=clock)
    watchdog.task_started("frozen", "t", hard=10)
    clock.run(watchdog, 3)
    clock.now += 40  # SIGSTOP for 40 s, then SIGCONT: the monotonic clock ran on
    watchdog.check()
    assert watchdog.overdue() == []  # its limit moved by the 40 s it did not run
    clock.run(watchdog, 5)
    assert watchdog.overdue() == []
    clock.run(watchdog, 3)
    assert watchdog.overdue() == ["frozen"]  # 10 s of running, at last


def test_a_late_round_shorter_than_a_suspension_moves_no_limit():
    clock = Clock()
    watchdog = Watchdog(clock=clock)
    watchdog.task_started("busy", "t", hard=2)
    clock.now += SUSPENDED_AFTER_S - 1  # a slow round on a loaded host: the task's time did pass
    watchdog.check()
    assert watchdog.overdue() == ["busy"]
