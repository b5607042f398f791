"""A session's counters (its `SessionCounters` row: event numbers, evidence ids, token and cost totals, the time of
its last call): raised and read back in one statement, with whatever else the caller adds to the row.

The ORM's update() returns a row count (Django 5.2), so raising a counter and reading its new value would take two
statements; this is the one hand-written statement that does both, an INSERT … ON CONFLICT DO UPDATE … RETURNING
(PostgreSQL, and SQLite since 3.35). The insert half gives a session made without its counters row (intake makes
it with the session) one at its first raise; the session is read in the same statement, so a gone session is an
error here and not a foreign-key failure at the commit.

Lock order: on PostgreSQL the statement takes the session row's lock first (FOR NO KEY UPDATE, what an UPDATE of
the session takes), then the counters row's. A writer that updates the session row and raises a counter in one
transaction, in either order, thus never waits for a raiser holding the counters row while holding the session
row it wants; and both locks, held to the commit, order concurrent raisers of one session. SQLite has one writer
at a time: there is no row lock to take. Names are quoted the standard SQL way (double quotes), which both take.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import connection, models

from tarsy.models import AlertSession, SessionCounters

COUNTERS = ("event_seq", "evidence_count")  # raised and read back; the other fields are added to or set


@dataclass(frozen=True)
class CountersChange:
    """What a step adds to its session's counters row (`add`: token and cost totals, by field) and sets on it
    (`assign`: its last call time), applied with the step's next raise (`session_counter_raise`)."""

    session_id: Any
    add: Mapping[str, Any] = field(default_factory=dict)
    assign: Mapping[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.add or self.assign)


def session_counter_raise(*, session_id: Any, counter: str, by: int = 1, change: CountersChange | None = None) -> int:
    """Add `by` to the session's `counter` (event_seq, evidence_count) and return its new value; `change` (of the
    same session) is applied in the same statement."""
    if counter not in COUNTERS:
        raise ValueError(f"{counter!r} is no counter of a session")
    if change is not None and str(change.session_id) != str(session_id):
        raise ValueError("a change goes with a raise of its own session's counter")
    value = _upsert(session_id, {counter: by, **(change.add if change else {})}, change.assign if change else {},
                    returning=counter)
    if value is None:
        raise AlertSession.DoesNotExist(f"session {session_id} is gone: its {counter} cannot be raised")
    return value


def session_counters_change(change: CountersChange) -> None:
    """Apply `change` alone (a step that raised no counter of its session); nothing for a gone session."""
    if change:
        _upsert(change.session_id, dict(change.add), dict(change.assign), returning=None)


def _upsert(session_id: Any, add: Mapping[str, Any], assign: Mapping[str, Any], *, returning: str | None) -> Any:
    """Insert the session's counters row with `add` and `assign` as its values, or add and set them on its row;
    the new value of `returning`, None when the session is gone."""
    meta, session = SessionCounters._meta, AlertSession._meta
    given = {name: _field(name) for name in (*add, *assign)}
    q = _quoted
    table, key, session_key = q(meta.db_table), q(meta.pk.column), q(session.pk.column)
    # Every NOT NULL column is given on insert: the fields' defaults are Python's, not the table's.
    inserted = {f: f.get_default() for f in meta.concrete_fields if not f.primary_key and not f.null}
    inserted.update({given[name]: value for name, value in {**add, **assign}.items()})
    sets = [f"{q(given[n].column)} = {table}.{q(given[n].column)} + excluded.{q(given[n].column)}" for n in add]
    sets += [f"{q(given[n].column)} = excluded.{q(given[n].column)}" for n in assign]
    lock = " FOR NO KEY UPDATE" if connection.vendor == "postgresql" else ""
    sql = (f"WITH session AS (SELECT {session_key} AS id FROM {q(session.db_table)} WHERE {session_key} = %s{lock}) "
           f"INSERT INTO {table} ({key}, {', '.join(q(f.column) for f in inserted)}) "
           f"SELECT id, {', '.join(['%s'] * len(inserted))} FROM session WHERE true "  # WHERE: SQLite's upsert rule
           f"ON CONFLICT ({key}) DO UPDATE SET {', '.join(sets)}"
           + (f" RETURNING {q(_field(returning).column)}" if returning else ""))
    params = [session.pk.get_db_prep_value(session_id, connection),
              *(f.get_db_prep_save(value, connection) for f, value in inserted.items())]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone() if returning else None
    return row[0] if row is not None else None


def _field(name: str) -> models.Field:
    """A concrete field of the counters row other than its key."""
    try:
        found = SessionCounters._meta.get_field(name)
    except FieldDoesNotExist:
        found = None
    if not isinstance(found, models.Field) or not found.concrete or found.primary_key:
        raise ValueError(f"{name!r} is no counter of a session")
    return found


def _quoted(name: str) -> str:
    """A table or column name quoted the standard SQL way (double quotes), which both databases take."""
    return f'"{name}"'
