"""Counters on the session row (event numbers, evidence ids): raised and read back in one statement, with the
other changes a block makes to the row riding along (an iteration's token totals).

The ORM's update() returns a row count, so raising a counter and reading its new value would take two
statements; this is the one hand-written statement that does both (UPDATE … RETURNING, on PostgreSQL and on
SQLite since 3.35). The UPDATE's row lock, held to the commit, orders concurrent raisers of one session.
Names are quoted the standard SQL way (double quotes), which both databases take.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import connection, models
from django.db.models import F

from tarsy.models import AlertSession


class _Rider:
    """Changes to a session row waiting for the next raise of one of its counters in the same block."""

    def __init__(self, session_id: Any, add: dict[str, Any], assign: dict[str, Any]):
        self.session_id, self.add, self.assign, self.applied = str(session_id), add, assign, False


_rider: ContextVar[_Rider | None] = ContextVar("session_counter_rider", default=None)


@contextmanager
def session_changes_ride(*, session_id: Any, add: dict[str, Any], assign: dict[str, Any]) -> Iterator[None]:
    """Inside a transaction: add `add` to the session's fields and set `assign` with the block's first raise of one
    of its counters (the event numbers of what the block publishes), one UPDATE where there would be two; a block
    that raises none applies them on their own when it ends (and nothing when it raises)."""
    rider = _Rider(session_id, add, assign)
    token = _rider.set(rider)
    try:
        yield
    finally:
        _rider.reset(token)
    if not rider.applied and (add or assign):
        AlertSession.all_objects.filter(id=session_id).update(**{f: F(f) + v for f, v in add.items()}, **assign)


def _quoted(name: str) -> str:
    """A table or column name quoted the standard SQL way (double quotes), which both databases take."""
    return f'"{name}"'


def session_counter_raise(*, session_id: Any, counter: str, by: int = 1) -> int:
    """Add `by` to the session's `counter` field and return its new value."""
    meta = AlertSession._meta
    field = meta.get_field(counter)
    if not isinstance(field, models.IntegerField) or not field.column:
        raise ValueError(f"{counter!r} is no counter of a session")
    quote = _quoted
    table, column, key = quote(meta.db_table), quote(field.column), quote(meta.pk.column)
    sets, params = [f"{column} = {column} + %s"], [by]
    rider = _rider.get()
    if rider is not None and not rider.applied and rider.session_id == str(session_id):
        rider.applied = True
        for name, value in rider.add.items():
            other, column_of = _column(name)
            sets.append(f"{quote(column_of)} = {quote(column_of)} + %s")
            params.append(other.get_db_prep_save(value, connection))
        for name, value in rider.assign.items():
            other, column_of = _column(name)
            sets.append(f"{quote(column_of)} = %s")
            params.append(other.get_db_prep_save(value, connection))
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {', '.join(sets)} WHERE {key} = %s RETURNING {column}",
                       [*params, meta.pk.get_db_prep_value(session_id, connection)])
        row = cursor.fetchone()
    if row is None:
        raise AlertSession.DoesNotExist(f"session {session_id} is gone: its {counter} cannot be raised")
    return row[0]


def _column(name: str) -> tuple[models.Field, str]:
    """A concrete field of the session row and its column."""
    field = AlertSession._meta.get_field(name)
    if not isinstance(field, models.Field) or not field.column:
        raise ValueError(f"{name!r} is no column of a session")
    return field, field.column
