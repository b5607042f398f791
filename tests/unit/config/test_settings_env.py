"""Settings per process role, each named by its entry point: read from the environment (a malformed value names its
variable at start-up), and nothing written when they are imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PRODUCTION = {"DATABASE_URL": "postgres://u@127.0.0.1:1/x", "REDIS_URL": "redis://127.0.0.1:1/0",
              "SECRET_KEY": "k" * 50}


def _start(tmp_path, code: str = "import django; django.setup()", *, role: str | None = "base",
           **env: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter with settings `tarsy.settings.<role>`; no role: the entry point's own."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("TARSY_", "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"))}
    base.update({"TARSY_DATA_DIR": str(tmp_path / "data"), **env})
    if role:
        base["DJANGO_SETTINGS_MODULE"] = f"tarsy.settings.{role}"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=base, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("TARSY_PORT", "eighty", "TARSY_PORT must be an integer, got 'eighty'"),
    ("TARSY_HARD_LIMIT_GRACE", "30s", "TARSY_HARD_LIMIT_GRACE must be a number, got '30s'"),
])
def test_a_malformed_number_names_its_variable(tmp_path, name, value, expected):
    result = _start(tmp_path, **{name: value})
    assert result.returncode != 0
    assert f"ImproperlyConfigured: {expected}" in result.stderr


def test_the_web_pool_size_is_checked_in_a_web_process(tmp_path):
    result = _start(tmp_path, role="web", **PRODUCTION, TARSY_WEB_DB_POOL_MAX="ten")
    assert "ImproperlyConfigured: TARSY_WEB_DB_POOL_MAX must be an integer, got 'ten'" in result.stderr


def test_well_formed_numbers_start(tmp_path):
    assert _start(tmp_path, TARSY_PORT="8080", TARSY_HARD_LIMIT_GRACE="2.5").returncode == 0


POOL = ("from django.conf import settings\ndb = settings.DATABASES['default']\n"
        "print(settings.SETTINGS_MODULE, db['CONN_MAX_AGE'], sorted(db['OPTIONS'].get('pool', {})))")


def test_the_web_entry_point_gives_its_process_the_connection_pool(tmp_path):
    """tarsy.asgi names the web settings before anything reads them (importing the `tarsy` package loads nothing):
    otherwise every request thread keeps a connection of its own and a burst of alerts runs PostgreSQL out of
    connections."""
    code = f"import tarsy.asgi\nfrom tarsy.celery import app\nprint(sorted(app.conf.beat_schedule))\n{POOL}"
    result = _start(tmp_path, code, role=None, **PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-3:-1] == ["['retention', 'sweep']",
                                                "tarsy.settings.web 0 ['max_size', 'min_size', 'timeout']"]


@pytest.mark.parametrize(("pool", "expected"), [
    ("threads", "tarsy.settings.worker 0 ['max_size', 'min_size', 'timeout']"),
    ("prefork", "tarsy.settings.worker 60 []"),
])
def test_the_celery_app_runs_workers_on_the_worker_settings(tmp_path, pool, expected):
    """What `celery -A tarsy worker` loads first; a threads worker pools its connections, a prefork child keeps one."""
    code = f"import tarsy.celery, django\ndjango.setup()\n{POOL}"
    result = _start(tmp_path, code, role=None, **PRODUCTION, TARSY_WORKER_POOL=pool)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == expected


IMPORT_ROLES = """
import importlib
from django.core.exceptions import ImproperlyConfigured
for role in ("base", "web", "worker", "test"):
    try:
        importlib.import_module(f"tarsy.settings.{role}")
        print(role, "ok")
    except ImproperlyConfigured as exc:
        print(role, exc)
"""


def test_importing_the_settings_writes_nothing(tmp_path):
    """The data directory, its database and secret key are made by `manage.py migrate`, not by whatever process
    happens to load the settings first (tests/unit/deploy/test_data_dir_permissions.py)."""
    result = _start(tmp_path, f"import tarsy.asgi\n{IMPORT_ROLES}", role=None, SECRET_KEY="k" * 50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-5:-1] == ["base ok", "web ok", "worker ok", "test ok"]
    assert list(tmp_path.iterdir()) == []


def test_a_server_without_a_secret_key_says_how_to_make_one(tmp_path):
    missing = (f"No secret key: set SECRET_KEY, or run `python manage.py migrate` (or `make run`), which creates "
               f"{tmp_path / 'data' / 'secret_key'}")
    result = _start(tmp_path, IMPORT_ROLES)
    assert result.stdout.split("\n")[-5:-1] == ["base ok", f"web {missing}", f"worker {missing}", "test ok"]
    assert list(tmp_path.iterdir()) == []
    production = _start(tmp_path, IMPORT_ROLES, **{**PRODUCTION, "SECRET_KEY": ""})
    missing = "SECRET_KEY must be set in production mode (DATABASE_URL and REDIS_URL are set)"
    assert production.stdout.split("\n")[-5:-1] == ["base ok", f"web {missing}", f"worker {missing}", "test ok"]


def test_other_processes_start_without_a_key(tmp_path):
    """A management command or the `tarsy` MCP server signs nothing: it starts (and `migrate` makes the key)."""
    assert _start(tmp_path, role="base").returncode == 0


def test_the_test_run_has_names_of_its_own():
    from django.conf import settings

    assert settings.SETTINGS_MODULE == "tarsy.settings.test"
    own = f"tarsy-test-{os.getpid()}"
    queue, prefix = os.environ.get("TARSY_QUEUE", own), os.environ.get("TARSY_CHANNEL_PREFIX", own)
    assert (settings.CELERY_TASK_DEFAULT_QUEUE, settings.EVENTS_PREFIX, settings.CACHES["default"]["KEY_PREFIX"]) == (
        queue, prefix, prefix)


def test_the_single_module_of_earlier_releases_is_refused_by_name(monkeypatch):
    import importlib

    from django.core.exceptions import ImproperlyConfigured

    import tarsy.settings

    monkeypatch.setenv("DJANGO_SETTINGS_MODULE", "tarsy.settings")
    with pytest.raises(ImproperlyConfigured, match="names no settings: unset it"):
        importlib.reload(tarsy.settings)
