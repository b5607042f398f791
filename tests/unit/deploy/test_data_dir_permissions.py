"""Embedded mode's SQLite database (and its -wal/-shm files) is readable by TARSy's user only, in a directory
only it can enter, like secret_key: it holds login sessions and every investigation."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _start_embedded(data_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "TARSY_TESTING")}
    env.update(TARSY_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="tarsy.settings")
    subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, check=True,
                   timeout=120)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_database_and_its_wal_files_are_private(tmp_path):
    data_dir = tmp_path / "data"
    _start_embedded(data_dir)
    database = data_dir / "tarsy.sqlite3"
    assert (_mode(data_dir), _mode(database)) == (0o700, 0o600)
    connection = sqlite3.connect(database)  # what Django opens: WAL mode, then a write
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE t (x)")
        connection.commit()
        assert _mode(Path(f"{database}-wal")) == 0o600 and _mode(Path(f"{database}-shm")) == 0o600
    finally:
        connection.close()


def test_a_world_readable_database_from_before_is_made_private(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    for name in ("tarsy.sqlite3", "tarsy.sqlite3-wal", "tarsy.sqlite3-shm"):
        (data_dir / name).touch(mode=0o644)
        (data_dir / name).chmod(0o644)
    _start_embedded(data_dir)
    assert _mode(data_dir) == 0o700
    assert [_mode(data_dir / name) for name in ("tarsy.sqlite3", "tarsy.sqlite3-wal", "tarsy.sqlite3-shm")] == [
        0o600] * 3
