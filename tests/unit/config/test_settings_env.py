"""Numeric environment settings: a malformed value names its variable at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _start(tmp_path, code: str = "import django; django.setup()", **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TARSY_", "DATABASE_URL", "REDIS_URL"))}
    base.update({"DJANGO_SETTINGS_MODULE": "tarsy.settings", "TARSY_DATA_DIR": str(tmp_path), **env})
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
    result = _start(tmp_path, TARSY_ASGI="1", DATABASE_URL="postgres://u@127.0.0.1:1/x", REDIS_URL="redis://127.0.0.1:1/0",
                    SECRET_KEY="k" * 50, TARSY_WEB_DB_POOL_MAX="ten")
    assert "ImproperlyConfigured: TARSY_WEB_DB_POOL_MAX must be an integer, got 'ten'" in result.stderr


def test_well_formed_numbers_start(tmp_path):
    assert _start(tmp_path, TARSY_PORT="8080", TARSY_HARD_LIMIT_GRACE="2.5").returncode == 0


def test_the_web_entry_point_gives_its_process_the_connection_pool(tmp_path):
    """tarsy.asgi says the process serves the web before anything reads the settings (importing the `tarsy` package
    loads Celery's app, which must not read them yet): otherwise every request thread keeps a connection of its own
    and a burst of alerts runs PostgreSQL out of connections."""
    code = ("import tarsy.asgi\nfrom django.conf import settings\nfrom tarsy.celery import app\n"
            "db = settings.DATABASES['default']\n"
            "print(db['CONN_MAX_AGE'], sorted(db['OPTIONS']['pool']), sorted(app.conf.beat_schedule))")
    result = _start(tmp_path, code, DATABASE_URL="postgres://u@127.0.0.1:1/x", REDIS_URL="redis://127.0.0.1:1/0",
                    SECRET_KEY="k" * 50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "0 ['max_size', 'min_size', 'timeout'] ['retention', 'sweep']"
