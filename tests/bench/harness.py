"""Shared benchmark harness: an own database, queue and channel prefix; real workers and web server as children.

Call `bootstrap()` before importing anything that touches Django models: it points
this process (and every child) at the benchmark database `tarsy_bench` on the
server named by DATABASE_URL (default: local PostgreSQL), recreates and
migrates it, and writes a configuration directory. Children are stopped at
exit, also on Ctrl-C and errors.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

import yaml

from tests.support.processes import UVICORN_OPTIONS, Proc, free_port

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
VENV_BIN = Path(PYTHON).parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"

_children: list[Child] = []


class Child(Proc):
    """A benchmark's child process (its own process group, logging to a file), stopped by `stop_all`."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path):
        self.name = name
        super().__init__(args, env, log_dir / f"{name}.log")
        _children.append(self)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 15.0) -> None:
        super().stop(timeout)
        if self in _children:
            _children.remove(self)


def stop_all() -> None:
    for child in list(reversed(_children)):
        child.stop()


def _on_signal(signum, frame):
    stop_all()
    raise SystemExit(128 + signum)


PG_BIN = Path("/usr/lib/postgresql/15/bin")


class OwnPostgres:
    """A throwaway PostgreSQL cluster (TARSY_BENCH_OWN_PG=1): no other user's connections or load on it.
    Durability settings are PostgreSQL's defaults (fsync and synchronous_commit on)."""

    def __init__(self, work: Path, max_connections: int = 300):
        import shutil

        self.dir = work / "pg"
        self.port = free_port()
        self.dir.mkdir()
        user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if user:
            shutil.chown(self.dir, "postgres")
            shutil.chown(work, "postgres")
        subprocess.run([*user, str(PG_BIN / "initdb"), "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres"],
                       check=True, stdout=subprocess.DEVNULL)
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c max_connections={max_connections}"
                   " -c shared_buffers=256MB")
        subprocess.run([*user, str(PG_BIN / "pg_ctl"), "-D", str(self.dir / "data"), "-l", str(self.dir / "pg.log"),
                        "-w", "-o", options, "start"], check=True, stdout=subprocess.DEVNULL)
        self._user = user
        atexit.register(self.stop)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        subprocess.run([*self._user, str(PG_BIN / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "fast", "-w",
                        "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Bench:
    """Environment of one benchmark run."""

    def __init__(self, name: str):
        self.name = name
        self.tag = f"tarsy-bench-{name}-{os.getpid()}"
        self.work = Path(tempfile.mkdtemp(prefix=f"tarsy-bench-{name}-"))
        self.config_dir = self.work / "config"
        self.trace_dir = self.work / "trace"
        self.trace_dir.mkdir()
        self.own_pg = OwnPostgres(self.work) if os.environ.get("TARSY_BENCH_OWN_PG") == "1" else None
        server = self.own_pg.url if self.own_pg else (os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL)
        db_name = os.environ.get("TARSY_BENCH_DB", f"tarsy_bench_{name}")
        parsed = urlparse(server)
        self.admin_url = urlunparse(parsed._replace(path="/postgres"))
        self.database_url = urlunparse(parsed._replace(path=f"/{db_name}"))
        self.db_name = db_name
        self.redis_url = os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL
        self.env = dict(os.environ)
        self.env.update({
            "DATABASE_URL": self.database_url, "REDIS_URL": self.redis_url, "SECRET_KEY": "bench-secret-key",
            "TARSY_QUEUE": self.tag, "TARSY_CHANNEL_PREFIX": self.tag, "TARSY_CONFIG_DIR": str(self.config_dir),
            "TARSY_DATA_DIR": str(self.work / "data"), "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "PYTHONUNBUFFERED": "1", "TARSY_LOG_LEVEL": "WARNING",
            "TARSY_INTAKE_RATE": "",  # load from one address is the point of a benchmark
        })
        self.env.pop("DJANGO_SETTINGS_MODULE", None)  # each child runs on its entry point's settings, as deployed

    # ---- setup ----------------------------------------------------------------------
    def write_config(self, *, tarsy: dict[str, Any], providers: dict[str, Any]) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        (self.config_dir / "tarsy.yaml").write_text(yaml.safe_dump(tarsy, sort_keys=False))
        (self.config_dir / "llm-providers.yaml").write_text(
            yaml.safe_dump({"llm_providers": providers}, sort_keys=False))

    def recreate_database(self) -> None:
        import psycopg

        conn = psycopg.connect(self.admin_url, autocommit=True)
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{self.db_name}" WITH (FORCE)')
            cur.execute(f'CREATE DATABASE "{self.db_name}"')
        conn.close()
        subprocess.run([PYTHON, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=self.env, check=True)

    def activate(self) -> None:
        """Make this process a Django client of the benchmark database (call after write_config)."""
        for key in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "TARSY_QUEUE", "TARSY_CHANNEL_PREFIX",
                    "TARSY_CONFIG_DIR", "TARSY_DATA_DIR", "ALLOWED_HOSTS", "TARSY_LOG_LEVEL"):
            os.environ[key] = self.env[key]
        os.environ["DJANGO_SETTINGS_MODULE"] = "tarsy.settings.base"  # a client: neither web nor worker
        import django

        django.setup()

    # ---- processes ------------------------------------------------------------------
    def start_worker(self, name: str, *, concurrency: int, pool: str = "prefork", trace: bool = True) -> Child:
        env = {**self.env, "TARSY_WORKER_POOL": pool}
        if trace:
            env["TARSY_BENCH_TRACE_DIR"] = str(self.trace_dir)
        args = [PYTHON, "-m", "tests.bench._worker", "worker", "-P", pool, "-c", str(concurrency),
                "-n", f"{name}@{self.tag}", "-Q", self.tag, "-l", "warning",
                "--without-heartbeat", "--without-mingle", "--without-gossip"]
        return Child(f"worker-{name}", args, env, self.work)

    def wait_workers(self, names: list[str], timeout: float = 90.0) -> None:
        """Until every named worker answers a ping (so a measurement starts with all of them ready)."""
        from tarsy.celery import app

        wanted = {f"{n}@{self.tag}" for n in names}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for child in _children:
                if child.name.startswith("worker-") and not child.alive():
                    raise RuntimeError(f"{child.name} exited:\n{child.log()[-3000:]}")
            replies = app.control.ping(destination=sorted(wanted), timeout=1.0) or []
            seen = {name for reply in replies for name in reply}
            if wanted <= seen:
                return
        raise RuntimeError(f"workers not ready after {timeout}s: {sorted(wanted)}")

    def start_server(self, name: str = "web", port: int | None = None, server: str = "uvicorn",
                     processes: int = 1) -> tuple[Child, str]:
        """The production web process: uvicorn serving tarsy.asgi (`processes` > 1: `uvicorn --workers N`,
        several processes on one socket); for comparison, daphne (one process) or gunicorn serving HTTP only."""
        import httpx

        port = port or free_port()
        if server == "uvicorn":
            args = [str(VENV_BIN / "uvicorn"), *UVICORN_OPTIONS, "--host", "127.0.0.1", "--port", str(port),
                    "--workers", str(processes), "--no-access-log", "--log-level", "warning", "tarsy.asgi:application"]
        elif server == "gunicorn":
            # A WSGI server for HTTP, the alternative to uvicorn (tests/bench/wsgi_app.py): gthread workers of 16
            # threads; their requests borrow from the same per-process pool of database connections.
            args = [str(VENV_BIN / "gunicorn"), "--worker-class", "gthread", "--threads", "16",
                    "--workers", str(processes), "--bind", f"127.0.0.1:{port}", "--log-level", "warning",
                    "tests.bench.wsgi_app:application"]
        else:
            if processes != 1:
                raise ValueError("daphne runs one process; start several servers instead")
            args = [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), "--access-log", os.devnull,
                    "tarsy.asgi:application"]
        child = Child(f"{name}-{port}", args, self.env, self.work)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        answered = 0
        while time.monotonic() < deadline:
            if not child.alive():
                raise RuntimeError(f"{server} exited:\n{child.log()[-3000:]}")
            try:
                if httpx.get(f"{base}/api/v1/alert-types", timeout=1).status_code == 200:
                    answered += 1
                    if answered >= processes:  # worker processes start one after another: give them all time
                        return child, base
                    time.sleep(1.0)
                    continue
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{server} did not answer on {base}")

    def forget_queue(self) -> None:
        """Remove the run's queue and its bindings from Redis (nothing else carries its tag)."""
        import redis

        try:
            client = redis.Redis.from_url(self.redis_url, socket_timeout=5)
            for key in client.scan_iter(f"*{self.tag}*"):
                client.delete(key)
        except redis.RedisError:
            pass

    # ---- traces -------------------------------------------------------------------
    def trace(self) -> list[dict[str, Any]]:
        records = []
        for path in self.trace_dir.glob("*.jsonl"):
            for line in path.read_text().splitlines():
                if line.strip():
                    records.append(json.loads(line))
        return records

    def clear_trace(self) -> None:
        for path in self.trace_dir.glob("*.jsonl"):
            path.unlink()


def bootstrap(name: str, *, tarsy: dict[str, Any], providers: dict[str, Any]) -> Bench:
    bench = Bench(name)
    atexit.register(bench.forget_queue)  # atexit runs last-in first-out: after the children are stopped
    atexit.register(stop_all)
    signal.signal(signal.SIGTERM, _on_signal)
    bench.write_config(tarsy=tarsy, providers=providers)
    print(f"[{name}] database {bench.db_name}, queue {bench.tag}, logs in {bench.work}", flush=True)
    bench.recreate_database()
    bench.activate()
    return bench


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (no interpolation: every figure is a value that was measured)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(round(pct / 100 * len(ordered) + 0.5))))
    return ordered[rank - 1]


def summary_ms(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50": percentile(values, 50), "p95": percentile(values, 95),
            "p99": percentile(values, 99), "mean": statistics.fmean(values) if values else float("nan")}


def wait_terminal(session_ids: list[str], timeout: float, workers: list[Child] | None = None,
                  interval: float = 0.5) -> float:
    """Until every session is terminal; returns the time it took."""
    from tarsy.models import TERMINAL_SESSION_STATUSES, AlertSession

    started = time.monotonic()
    deadline = started + timeout
    while time.monotonic() < deadline:
        done = AlertSession.all_objects.filter(id__in=session_ids, status__in=TERMINAL_SESSION_STATUSES).count()
        if done == len(session_ids):
            return time.monotonic() - started
        for child in workers or []:
            if not child.alive():
                raise RuntimeError(f"{child.name} exited:\n{child.log()[-3000:]}")
        time.sleep(interval)
    raise RuntimeError(f"sessions not terminal after {timeout}s")


def machine() -> dict[str, Any]:
    import platform

    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "loadavg_1m": round(load[0], 2), "py_loop_ms": py_loop_ms()}


def py_loop_ms() -> float:
    """How fast this machine runs Python: the best of 5 runs of a fixed loop (~10 ms on a fast core). Hosts of
    one kind differ by 2x or more, so figures from two hosts compare only through this."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        total = 0
        for i in range(200_000):
            total += i % 7
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 2)


def emit(figures: dict[str, Any]) -> None:
    """The last line of every benchmark: one JSON object."""
    print(json.dumps(figures, sort_keys=False), flush=True)


BASE_AGENTS = {"KubernetesAgent": {"mcp_servers": []}, "ChatAgent": {"mcp_servers": []}}


def scripted(script: Any, *, latency_ms: int = 0, chunk_size: int = 0) -> dict[str, Any]:
    return {"type": "scripted", "script": script, "latency_ms": latency_ms, "chunk_size": chunk_size}


def run(main) -> None:
    """Entry point of every benchmark module: run it, and stop whatever it started even on error or Ctrl-C."""
    try:
        main()
    finally:
        stop_all()
