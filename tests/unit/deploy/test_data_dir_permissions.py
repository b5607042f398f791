"""Embedded mode's SQLite database (and its -wal/-shm files) is readable by TARSy's user only, in a directory
only it can enter, like secret_key: it holds login sessions and every investigation. `manage.py migrate` makes
them (importing the settings writes nothing: tests/unit/config/test_settings_env.py)."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _migrate_embedded(data_dir: Path) -> None:
    """`manage.py migrate` as `make run` runs it; `--plan`: the files are made before the migrations are read, and
    applying them adds nothing to what is checked here."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY",
                                                            "DJANGO_SETTINGS_MODULE")}
    env.update(TARSY_DATA_DIR=str(data_dir))
    subprocess.run([sys.executable, "manage.py", "migrate", "--plan"], cwd=ROOT, env=env, check=True, timeout=120,
                   capture_output=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_database_and_its_wal_files_are_private(tmp_path):
    data_dir = tmp_path / "data"
    _migrate_embedded(data_dir)
    database = data_dir / "tarsy.sqlite3"
    assert (_mode(data_dir), _mode(database), _mode(data_dir / "secret_key")) == (0o700, 0o600, 0o600)
    connection = sqlite3.connect(database)  # what Django opens: WAL mode, then a write
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE t (x)")
        connection.commit()
        assert _mode(Path(f"{database}-wal")) == 0o600 and _mode(Path(f"{database}-shm")) == 0o600
    finally:
        connection.close()


def test_a_world_readable_database_from_before_is_made_private(tmp_path):
    """The -wal and -shm files last while the database is open (here by a server still running)."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    database = data_dir / "tarsy.sqlite3"
    running = sqlite3.connect(database)
    try:
        running.execute("PRAGMA journal_mode=WAL")
        running.execute("CREATE TABLE t (x)")
        running.commit()
        for name in ("tarsy.sqlite3", "tarsy.sqlite3-wal", "tarsy.sqlite3-shm"):
            (data_dir / name).chmod(0o644)
        _migrate_embedded(data_dir)
        assert _mode(data_dir) == 0o700
        assert [_mode(data_dir / name) for name in ("tarsy.sqlite3", "tarsy.sqlite3-wal", "tarsy.sqlite3-shm")] == [
            0o600] * 3
    finally:
        running.close()
    secret_key = (data_dir / "secret_key").read_text()
    _migrate_embedded(data_dir)  # again: the key is kept (admin logins last across restarts)
    assert (data_dir / "secret_key").read_text() == secret_key and len(secret_key) > 50
