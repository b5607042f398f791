"""Fixtures of the end-to-end tests: the shared integration fixtures, and `make run`'s server."""

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import config_dir, scripted_config, worker  # noqa: F401  (shared fixtures)
from tests.support.processes import ROOT, Proc, free_port, wait_for

_STRIPPED = ("DATABASE_URL", "REDIS_URL", "TARSY_CONFIG_DIR", "KUBECONFIG", "GOOGLE_API_KEY", "OPENAI_API_KEY",
             "ANTHROPIC_API_KEY", "XAI_API_KEY", "SECRET_KEY", "TARSY_QUEUE", "TARSY_CHANNEL_PREFIX",
             "DJANGO_SETTINGS_MODULE", "TARSY_TEST_DB_NAME")


@contextmanager
def serve_embedded(tmp_path: Path, *, pace_ms: int = 0, actions: bool = False) -> Iterator[tuple[str, Proc]]:
    """`manage.py serve` as `make run` starts it: embedded mode, demo LLM, demo cluster, no API key; yields the base
    URL and the process. `pace_ms`: the demo's pace (`serve` paces it for people; tests do not wait). Without
    `actions`, a tarsy.yaml turns approved actions off, so no investigation waits for a person."""
    env = {k: v for k, v in os.environ.items() if k not in _STRIPPED}
    port = free_port()
    env.update(TARSY_DATA_DIR=str(tmp_path / "var"), TARSY_PORT=str(port), PYTHONUNBUFFERED="1",
               TARSY_DEMO_PACE_MS=str(pace_ms))
    if not actions:
        (tmp_path / "config").mkdir(exist_ok=True)
        (tmp_path / "config" / "tarsy.yaml").write_text("actions:\n  enabled: false\n")
        env["TARSY_CONFIG_DIR"] = str(tmp_path / "config")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True,
                   timeout=120)
    proc = Proc([sys.executable, "manage.py", "serve"], env, tmp_path / "serve.log")
    base = f"http://127.0.0.1:{port}"

    def up():
        if proc.popen.poll() is not None:
            raise AssertionError(proc.log())
        try:
            return httpx.get(f"{base}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, timeout=60, message="manage.py serve")
        yield base, proc
    finally:
        proc.stop()


@pytest.fixture
def embedded_server(tmp_path):
    with serve_embedded(tmp_path) as served:
        yield served
