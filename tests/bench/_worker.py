"""`celery -A tarsy worker` with optional benchmark tracing (`python -m tests.bench._worker worker …`).

With TARSY_BENCH_TRACE_DIR set, every worker process appends JSON lines to
`<dir>/<pid>.jsonl`: one per task (wall time, SQL statements and their time,
LLM provider calls with the time spent inside the provider) and one per
persistent event handed to Redis after commit (for delivery
latency). Nothing the product does changes: the hooks only observe.

Other switches (environment):
  TARSY_BENCH_SQL_DIR=DIR      per-statement counts and time, `<pid>.sql.json`
  TARSY_BENCH_PROFILE_DIR=DIR  cProfile of run_iteration tasks in CPU time (slows them), `<pid>.prof`
  TARSY_BENCH_DB_REUSE=1       what-if: keep the database connection across tasks (Django's
                               CONN_MAX_AGE decides) instead of Celery closing it around every task
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

_state = threading.local()
_lock = threading.Lock()
_buffer: list[str] = []


def _task_state() -> dict:
    task = getattr(_state, "task", None)
    if task is None:
        task = _state.task = {"queries": 0, "db_s": 0.0, "llm": []}
    return task


_sql_stats: dict[str, list[float]] = {}
_profile_dir = os.environ.get("TARSY_BENCH_PROFILE_DIR")  # cProfile of run_iteration tasks (slows them down)
_sql_dir = os.environ.get("TARSY_BENCH_SQL_DIR")  # per-statement counts and time


def _count_queries(execute, sql, params, many, context):
    started = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        elapsed = time.perf_counter() - started
        task = _task_state()
        task["queries"] += 1
        task["db_s"] += elapsed
        if _sql_dir:
            stat = _sql_stats.setdefault(sql[:90], [0, 0.0])
            stat[0] += 1
            stat[1] += elapsed


def _write(record: dict) -> None:
    with _lock:
        _buffer.append(json.dumps(record))


def _flush(directory: Path) -> None:
    with _lock:
        lines = list(_buffer)
        _buffer.clear()
    if lines:
        with open(directory / f"{os.getpid()}.jsonl", "a") as fh:
            fh.write("\n".join(lines) + "\n")


def _install_provider_timing() -> None:
    from agents.llm.scripted import ScriptedProvider

    original = ScriptedProvider.generate

    def generate(self, request):
        started, inside = time.time(), 0.0
        stream = original(self, request)
        try:
            while True:
                t0 = time.perf_counter()
                try:
                    chunk = next(stream)
                except StopIteration:
                    inside += time.perf_counter() - t0
                    return
                inside += time.perf_counter() - t0
                yield chunk
        finally:
            _task_state()["llm"].append({"execution_id": request.execution_id, "iteration": request.iteration,
                                         "type": request.interaction_type, "start": started, "inside_s": inside,
                                         "end": time.time()})

    ScriptedProvider.generate = generate


def _install_publish_timing() -> None:
    from tarsy.streaming import publisher

    original = publisher._send

    def _send(frames, *args, **kwargs):
        now = time.time()
        for _channel, event_id, _text in frames:
            if event_id is not None:
                _write({"kind": "publish", "event_id": event_id, "t": now})
        return original(frames, *args, **kwargs)

    publisher._send = _send


def _install_commit_timing() -> None:
    """Commits of atomic blocks do not pass through execute wrappers: time them too (they wait for fsync)."""
    from django.db.backends.base.base import BaseDatabaseWrapper

    original = BaseDatabaseWrapper._commit

    def _commit(self):
        started = time.perf_counter()
        try:
            return original(self)
        finally:
            task = _task_state()
            task["commits"] = task.get("commits", 0) + 1
            task["commit_s"] = task.get("commit_s", 0.0) + time.perf_counter() - started

    BaseDatabaseWrapper._commit = _commit


def install(directory: Path) -> None:
    from celery.signals import task_postrun, task_prerun, worker_process_init
    from django.db.backends.signals import connection_created

    @worker_process_init.connect(weak=False)
    def _child_ready(**kwargs):
        from django.db import connections

        connections["default"].execute_wrappers.append(_count_queries)

    def _thread_connected(connection=None, **kwargs):
        """Pool threads each have a connection of their own (and connect again after giving it back)."""
        if connection is not None and _count_queries not in connection.execute_wrappers:
            connection.execute_wrappers.append(_count_queries)

    connection_created.connect(_thread_connected, weak=False)

    profiler = None
    if _profile_dir:
        import cProfile

        # CPU time, not wall time: on a shared machine a wall-clock profile charges the waits for PostgreSQL,
        # Redis and the scheduler to whichever function was waiting (a quarter of a loaded run's total).
        profiler = cProfile.Profile(time.process_time)
    counter = {"tasks": 0}

    @task_prerun.connect(weak=False)
    def _pre(task_id=None, task=None, args=None, **kwargs):
        _state.task = {"queries": 0, "db_s": 0.0, "llm": [], "t_pre": time.time(), "cpu_pre": time.process_time()}
        if profiler and task and task.name == "tarsy.tasks.run_iteration":
            profiler.enable()

    @task_postrun.connect(weak=False)
    def _post(task_id=None, task=None, args=None, **kwargs):
        if profiler:
            profiler.disable()
            counter["tasks"] += 1
            if counter["tasks"] % 20 == 0:
                profiler.dump_stats(Path(_profile_dir) / f"{os.getpid()}.prof")
        counter["tasks"] += 0 if profiler else 1
        if _sql_dir and counter["tasks"] % 20 == 0:
            with open(Path(_sql_dir) / f"{os.getpid()}.sql.json", "w") as fh:
                json.dump(_sql_stats, fh)
        data = _task_state()
        _write({"kind": "task", "name": task.name if task else "", "args": list(args or []),
                "t_pre": data.get("t_pre"), "t_post": time.time(), "queries": data["queries"],
                "db_ms": data["db_s"] * 1000, "commits": data.get("commits", 0),
                "commit_ms": data.get("commit_s", 0.0) * 1000, "llm": data["llm"],
                "cpu_ms": (time.process_time() - data.get("cpu_pre", time.process_time())) * 1000})
        _state.task = None
        _flush(directory)

    _install_provider_timing()
    _install_publish_timing()
    _install_commit_timing()


def reuse_db_connections() -> None:
    """What-if: keep a worker's database connection across tasks (Django's CONN_MAX_AGE and health checks
    decide when to close it) instead of Celery's default of closing it around every task."""
    from celery.fixups.django import DjangoWorkerFixup
    from django.db import close_old_connections

    DjangoWorkerFixup.close_database = lambda self, **kwargs: close_old_connections()


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tarsy.settings.worker")
    trace_dir = os.environ.get("TARSY_BENCH_TRACE_DIR")
    import django

    django.setup()
    if trace_dir:
        install(Path(trace_dir))
    if os.environ.get("TARSY_BENCH_DB_REUSE") == "1":
        reuse_db_connections()
    from celery.bin.celery import main as celery_main

    sys.argv = ["celery", "-A", "tarsy", *sys.argv[1:]]
    celery_main()


if __name__ == "__main__":
    main()
