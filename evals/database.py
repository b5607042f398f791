"""The database an eval run writes its sessions to: by default one of its own, so eval sessions stay out of the
operator's session list, quality page, spend and admin.

PostgreSQL: `<name>_eval` on the same server; SQLite: `<file>_eval.sqlite3` beside the main file. It is created
when missing and migrated before the run. The switch is made as Django's test runner makes it (the connection's
`settings_dict` and `settings.DATABASES`), so every thread of the in-process worker opens the eval database.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.db import connections

EVAL_SUFFIX = "_eval"
DATABASE_NAME_ENV = "TARSY_DATABASE_NAME"  # read by tarsy.settings.base


def eval_name(name: str | Path, vendor: str) -> str:
    if vendor == "sqlite":
        path = Path(name)
        return str(path.with_name(f"{path.stem}{EVAL_SUFFIX}{path.suffix}"))
    return f"{name}{EVAL_SUFFIX}"


def _create_postgresql(name: str) -> None:
    """Without the connection's statement timeout (the web's 30 s): creating a database waits for a checkpoint,
    and a database another run is dropping holds it longer, which a loaded host has taken past a minute."""
    connection = connections["default"]
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 0")
        try:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
            if cursor.fetchone() is None:
                cursor.execute(f"CREATE DATABASE {connection.ops.quote_name(name)}")
        finally:
            cursor.execute("RESET statement_timeout")


def _switch(name: str | Path, env: str | None) -> None:
    """`env`: TARSY_DATABASE_NAME for the stdio children started from now on (the built-in `tarsy` MCP server
    must read the memories and sessions of the database the run writes to); None removes it."""
    connections.close_all()
    connections["default"].settings_dict["NAME"] = str(name)
    settings.DATABASES["default"]["NAME"] = str(name)
    if env is None:
        os.environ.pop(DATABASE_NAME_ENV, None)
    else:
        os.environ[DATABASE_NAME_ENV] = env


@contextmanager
def eval_database() -> Iterator[str]:
    """Point the default database at the eval database (created and migrated if needed) for the length of the
    block; yields its name. The main database is back afterwards."""
    connection = connections["default"]
    main = connection.settings_dict["NAME"]
    name = eval_name(main, connection.vendor)
    if connection.vendor == "postgresql":
        _create_postgresql(name)
    before = os.environ.get(DATABASE_NAME_ENV)
    _switch(name, str(name))
    try:
        call_command("migrate", interactive=False, verbosity=0)
        yield name
    finally:
        _switch(main, before)
