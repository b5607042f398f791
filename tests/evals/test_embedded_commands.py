"""`manage.py eval` and `manage.py replay` as a fresh clone runs them: embedded mode (SQLite, the in-process
worker the commands start), no services, no configuration."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.processes import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

_STRIPPED = ("DATABASE_URL", "REDIS_URL", "TARSY_CONFIG_DIR", "KUBECONFIG", "GOOGLE_API_KEY", "OPENAI_API_KEY",
             "ANTHROPIC_API_KEY", "XAI_API_KEY", "SECRET_KEY", "TARSY_QUEUE", "TARSY_CHANNEL_PREFIX",
             "DJANGO_SETTINGS_MODULE", "TARSY_TEST_DB_NAME")


def _manage(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=200)


def test_eval_and_replay_run_in_embedded_mode(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in _STRIPPED}
    env.update(TARSY_DATA_DIR=str(tmp_path / "var"), PYTHONUNBUFFERED="1")
    assert _manage(env, "migrate", "--noinput", "-v", "0").returncode == 0
    report = tmp_path / "report.jsonl"
    done = _manage(env, "eval", "--scenario", "crashloop-*", "--scenario", "herring-jvm-heap-oom", "--repeat", "2",
                   "--json", str(report), "--into-main-db")  # replay below reads the main database
    assert done.returncode == 0, done.stdout + done.stderr
    totals = json.loads(done.stdout.strip().splitlines()[-1])
    figures = [totals[k] for k in ("scenarios", "runs", "passed", "pass@k", "pass^k")]
    assert figures == [3, 6, 6, 1, 1]
    assert "crashloop-missing-dependency" in done.stdout and "pass pass" in done.stdout  # the table, per attempt
    assert json.loads(report.read_text().splitlines()[-1]) == totals
    session_id = json.loads(report.read_text().splitlines()[0])["session_id"]
    replayed = _manage(env, "replay", session_id)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "the timeline matches" in replayed.stdout
    missing = _manage(env, "replay", "00000000-0000-0000-0000-000000000000")
    assert missing.returncode == 1
    assert "not found" in missing.stderr
