"""The web process keeps what it loads at start out of the garbage collector's scans, as the workers do: a full
collection walking Django, DRF and the config under the GIL stalled every request in flight (intake's p99)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_asgi_application_freezes_what_it_loaded(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TARSY_", "DATABASE_URL", "REDIS_URL"))}
    env.update({"DJANGO_SETTINGS_MODULE": "tarsy.settings.web", "TARSY_DATA_DIR": str(tmp_path),
                "SECRET_KEY": "test-secret-key"})
    script = "import gc, tarsy.asgi; print(gc.get_freeze_count())"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) > 10_000  # the modules, classes and config of the process
