"""Real processes for integration tests: Celery workers and the ASGI server, on the test database."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_database_url() -> str:
    """The URL of the database pytest-django created, for child processes."""
    db = connection.settings_dict
    return f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def child_env(config_dir: Path | None = None, **extra: str) -> dict[str, str]:
    """A worker, beat or web process of the test run: on its entry point's settings, as deployed (the test
    settings are this process's), with this process's queue, event prefix and Redis database (a pytest-xdist
    worker's own: tarsy/settings/test.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "PYTEST_XDIST_WORKER")}
    env.update({
        "DATABASE_URL": test_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "SECRET_KEY": "test-secret-key",
        "TARSY_QUEUE": settings.CELERY_TASK_DEFAULT_QUEUE,
        "TARSY_CHANNEL_PREFIX": settings.EVENTS_PREFIX,
        "TARSY_CONFIG_DIR": str(config_dir or ""),
        "PYTHONUNBUFFERED": "1",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    })
    env.update(extra)
    return env


class Proc:
    """A child process in its own process group, stopped (and reaped) at teardown."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path):
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - the child writes to it until stop() closes it
        self.popen = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float = 10.0) -> None:
        if self.popen.poll() is None:
            self.kill(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill(signal.SIGKILL)
                self.popen.wait(5)
        self._log.close()


def worker_command(*, concurrency: int = 2, name: str = "w1", pool: str = "prefork") -> list[str]:
    """The `celery worker` command line of a test worker (gossip and mingle off, as in deploy/)."""
    return [str(VENV_BIN / "celery"), "-A", "tarsy", "worker", "-P", pool, "-c", str(concurrency),
            "-n", f"{name}@%h-{os.getpid()}", "-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "-l", "warning",
            "--without-heartbeat", "--without-mingle", "--without-gossip"]


def start_worker(tmp_path: Path, config_dir: Path | None = None, *, concurrency: int = 2, name: str = "w1",
                 pool: str = "prefork", **env: str) -> Proc:
    args = worker_command(concurrency=concurrency, name=name, pool=pool)
    return Proc(args, child_env(config_dir, TARSY_WORKER_POOL=pool, **env), tmp_path / f"worker-{name}.log")


def wait_for(predicate, timeout: float, interval: float = 0.1, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")


def start_redis(tmp_path: Path, port: int, *options: str) -> Proc:
    """A redis-server of the test's own on `port` (never the machine's shared one), once it accepts clients;
    `options` are added to its command line (later ones win)."""
    import shutil

    if not shutil.which("redis-server"):
        raise AssertionError("redis-server is required for this test")
    log_path = tmp_path / f"redis-{port}.log"
    args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *options]
    proc = Proc(args, {"PATH": "/usr/bin:/bin:/usr/local/bin"}, log_path)  # (a restart starts a fresh log)
    wait_for(lambda: b"Ready to accept" in log_path.read_bytes(), timeout=10, message="redis to start")
    return proc


def start_beat(tmp_path: Path, config_dir: Path | None = None, *, interval: float = 1.0, **env: str) -> Proc:
    """`celery beat` with a fast sweep so lost work is found within a test's patience."""
    args = [str(VENV_BIN / "celery"), "-A", "tarsy", "beat", "-s", str(tmp_path / "beat-schedule"), "-l", "warning"]
    return Proc(args, child_env(config_dir, TARSY_SWEEP_INTERVAL=str(interval), **env), tmp_path / "beat.log")


# The production web server's options (deploy/Dockerfile, compose.yaml and k8s/web.yaml run the same, a deploy
# test checks it). No per-message deflate: compressing each frame once per socket cost more time in the fan-out
# than the bytes it saved (events are small JSON; ws_fanout p50 11-13 -> 9 ms, p99 44 -> 28 ms).
UVICORN_OPTIONS = ["--loop", "uvloop", "--http", "httptools", "--ws", "websockets-sansio", "--lifespan", "off",
                   "--no-proxy-headers", "--ws-per-message-deflate", "false"]


def start_server(tmp_path: Path, config_dir: Path | None = None, **env: str) -> tuple[Proc, str]:
    """The production web server (uvicorn, one process) on a free port; returns it and its base URL once it
    answers."""
    import httpx

    port = free_port()
    args = [str(VENV_BIN / "uvicorn"), *UVICORN_OPTIONS, "--host", "127.0.0.1", "--port", str(port),
            "--workers", "1", "--log-level", "warning", "tarsy.asgi:application"]
    proc = Proc(args, child_env(config_dir, **env), tmp_path / f"web-{port}.log")
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if proc.popen.poll() is not None:
            raise AssertionError(f"web server exited:\n{proc.log()}")
        try:
            return httpx.get(f"{base}/api/v1/alert-types", timeout=1).status_code < 500  # 401/403: auth is on
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, timeout=30, message=f"web server on {base}")
    except BaseException:
        proc.stop()
        raise
    return proc, base
