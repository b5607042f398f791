from __future__ import annotations

import pytest

from tests.support.configdir import scripted_provider, write_config
from tests.support.processes import start_worker


@pytest.fixture
def config_dir(tmp_path):
    return tmp_path / "config"


@pytest.fixture
def scripted_config(config_dir):
    """Factory: a chain config whose default provider is a scripted one; activates it in this process."""

    def make(script, *, tarsy=None, latency_ms=0, chunk_size=0, extra_providers=None):
        tarsy = dict(tarsy or {})
        tarsy.setdefault("defaults", {}).setdefault("llm_provider", "scripted")
        tarsy.setdefault("agents", {}).setdefault("KubernetesAgent", {"mcp_servers": []})
        tarsy["agents"].setdefault("ChatAgent", {"mcp_servers": []})
        providers = {"scripted": scripted_provider(script, latency_ms, chunk_size), **(extra_providers or {})}
        return write_config(config_dir, tarsy=tarsy, providers=providers)

    return make


@pytest.fixture
def worker(tmp_path, config_dir):
    """Factory for real `celery -A tarsy worker` subprocesses on the test database and Redis."""
    started = []

    def start(**kwargs):
        proc = start_worker(tmp_path, config_dir, name=f"w{len(started) + 1}", **kwargs)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture
def beat(tmp_path, config_dir):
    from tests.support.processes import start_beat

    started = []

    def start(**kwargs):
        proc = start_beat(tmp_path, config_dir, **kwargs)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()
