"""`manage.py migrate`, which first makes embedded mode's files: settings only read them, so importing them
writes nothing.

Everything under the data directory is private to TARSy's user: the directory (0700), the SQLite database with
its -wal and -shm files (0600: login sessions and every investigation) and the secret key (0600)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError
from django.core.management.commands.migrate import Command as MigrateCommand
from django.db import connections


class Command(MigrateCommand):
    def execute(self, *args, **options):
        """Before the system checks, which open the database."""
        try:
            prepare_data_dir(options["database"])
        except OSError as exc:
            raise CommandError(f"TARSy's data directory {settings.DATA_DIR} is not usable: {exc}") from None
        return super().execute(*args, **options)


def prepare_data_dir(database: str) -> None:
    """The data directory, embedded mode's secret key and an SQLite database file, created private before anything
    opens them; a database file from before is made private."""
    db = connections[database].settings_dict
    sqlite = db["ENGINE"] == "django.db.backends.sqlite3" and db["NAME"] != ":memory:"
    sqlite_file = Path(db["NAME"]) if sqlite else None
    key_needed = settings.EMBEDDED and not os.environ.get("SECRET_KEY")
    if sqlite_file is None and not key_needed:
        return
    _private_dir(settings.DATA_DIR)
    if key_needed and not settings.SECRET_KEY_FILE.exists():
        _private_file(settings.SECRET_KEY_FILE, secrets.token_urlsafe(50))
    if sqlite_file is not None:
        sqlite_file.parent.mkdir(parents=True, exist_ok=True)  # the data directory unless DATABASE_URL names another
        _private_file(sqlite_file)
        for path in (Path(f"{sqlite_file}{suffix}") for suffix in ("-wal", "-shm")):
            if path.exists():
                path.chmod(0o600)


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)


def _private_file(path: Path, text: str = "") -> None:
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    path.chmod(0o600)
    if text:
        path.write_text(text)
