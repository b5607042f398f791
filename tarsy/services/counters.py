"""Counters on the session row (event numbers, evidence ids): raised and read back in one statement.

The ORM's update() returns a row count, so raising a counter and reading its new value would take two
statements; this is the one hand-written statement that does both (UPDATE … RETURNING, on PostgreSQL and on
SQLite since 3.35). The UPDATE's row lock, held to the commit, orders concurrent raisers of one session.
Names are quoted the standard SQL way (double quotes), which both databases take.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, models

from tarsy.models import AlertSession


def session_counter_raise(*, session_id: Any, counter: str, by: int = 1) -> int:
    """Add `by` to the session's `counter` field and return its new value."""
    meta = AlertSession._meta
    field = meta.get_field(counter)
    if not isinstance(field, models.IntegerField) or not field.column:
        raise ValueError(f"{counter!r} is no counter of a session")
    table, column, key = (f'"{name}"' for name in (meta.db_table, field.column, meta.pk.column))
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {column} = {column} + %s WHERE {key} = %s RETURNING {column}",
                       [by, meta.pk.get_db_prep_value(session_id, connection)])
        row = cursor.fetchone()
    if row is None:
        raise AlertSession.DoesNotExist(f"session {session_id} is gone: its {counter} cannot be raised")
    return row[0]
