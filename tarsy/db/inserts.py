"""A new row and the new rows that refer to it, stored in one round trip, their INSERT compiled once per process.

Intake stores each alert as a session plus its status event. Through the ORM that is two statements, and
compiling them (`Model.save`, `bulk_create`) cost more CPU than anything else the request does. Here the SQL
text is built once per model from its fields, and each row's values are prepared by the fields themselves
(`pre_save`, `get_db_prep_save`), as the ORM's own compiler does. On PostgreSQL both INSERTs go in one
statement (the parent in a data-modifying CTE; the foreign keys Django creates are checked at commit);
SQLite has no such CTE and runs them one after the other.

Like `bulk_create`, this sends no pre_save/post_save signals (TARSy connects none to its models).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model


@cache
def _columns(model: type[Model]) -> tuple[tuple, str, str, str | None]:
    """(fields, quoted table, "(columns)", the returned field's attname): what the ORM inserts for `model`."""
    quote = connection.ops.quote_name
    meta = model._meta
    returning = [f for f in meta.local_concrete_fields if f.db_returning]
    if len(returning) > 1:
        raise TypeError(f"{meta.label}: more than one field the database fills")
    fields = tuple(f for f in meta.local_concrete_fields if not f.db_returning and f.generated is False)
    if any(hasattr(f, "get_placeholder") for f in fields):
        raise TypeError(f"{meta.label}: a field with its own placeholder")
    columns = "(" + ", ".join(quote(f.column) for f in fields) + ")"
    return fields, quote(meta.db_table), columns, returning[0].attname if returning else None


def _values(fields: tuple, rows: Sequence[Model]) -> tuple[str, list]:
    placeholder = "(" + ", ".join(["%s"] * len(fields)) + ")"
    wrapper = connections[DEFAULT_DB_ALIAS]  # once: each use of the `connection` proxy looks it up again
    params = [f.get_db_prep_save(f.pre_save(row, True), wrapper) for row in rows for f in fields]
    return ", ".join([placeholder] * len(rows)), params


@dataclass(frozen=True)
class PreparedInsert:
    """A row's INSERT with its values prepared: its auto_now_add times are set, so what is built from the row
    before it is stored (an event quoting `created_at`) says what will be stored."""

    row: Model
    sql: str
    params: list
    returned: str | None


def insert_prepare(rows: Sequence[Model]) -> PreparedInsert:
    """The INSERT of `rows` (of one model; the first is `.row`), values prepared as the ORM's compiler does."""
    fields, table, columns, returned = _columns(type(rows[0]))
    values, params = _values(fields, rows)
    returning = f" RETURNING {connection.ops.quote_name(returned)}" if returned else ""
    return PreparedInsert(rows[0], f"INSERT INTO {table} {columns} VALUES {values}{returning}", params, returned)


def insert_select(row: Model, source: str, expressions: dict[str, str]) -> PreparedInsert:
    """The INSERT of one row as a SELECT from `source` (a WITH clause's name), so a value can take something the
    same statement wrote: `expressions` maps a field's name to SQL holding one parameter, the field's prepared
    value; every other field is its value."""
    fields, table, columns, returned = _columns(type(row))
    _, params = _values(fields, [row])
    select = ", ".join(expressions.get(f.name, "%s") for f in fields)
    returning = f" RETURNING {connection.ops.quote_name(returned)}" if returned else ""
    return PreparedInsert(row, f"INSERT INTO {table} {columns} SELECT {select} FROM {source}{returning}", params,
                          returned)


def rows_insert(*, parent: PreparedInsert, children: Sequence[Model]) -> None:
    """INSERT the prepared parent (its primary key already set) and `children` (of one model, their foreign key
    to it set); the children get the ids the database gave them. Call it inside a transaction."""
    if parent.returned is not None or parent.row.pk is None:
        raise ValueError("the parent's primary key must be set before the INSERT")
    child = insert_prepare(children) if children else None
    with connection.cursor() as cursor:
        if child is None:
            cursor.execute(parent.sql, parent.params)
        elif connection.vendor == "postgresql":
            cursor.execute(f"WITH parent AS ({parent.sql}) {child.sql}", parent.params + child.params)
        else:
            cursor.execute(parent.sql, parent.params)
            cursor.execute(child.sql, child.params)
        ids = cursor.fetchall() if child is not None and child.returned else []
    for row in (parent.row, *children):
        row._state.adding, row._state.db = False, connection.alias
    if ids:
        for row, (value,) in zip(children, ids, strict=True):
            setattr(row, child.returned, value)


def insert_rows(rows: Sequence[Model]) -> None:
    """INSERT new rows of several models (a step's messages and its LLM and MCP records), grouped by model in
    their order, in one statement on PostgreSQL (an INSERT per model in one WITH clause); the rows get the ids
    the database gave them. Call it inside a transaction."""
    groups: dict[type[Model], list[Model]] = {}
    for row in rows:
        groups.setdefault(type(row), []).append(row)
    inserts = [insert_prepare(group) for group in groups.values()]
    if any(insert.returned != "id" for insert in inserts):
        raise TypeError("insert_rows writes rows whose id the database gives")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            parts = ", ".join(f"r{i} AS ({insert.sql})" for i, insert in enumerate(inserts))
            # Ids of one multi-row INSERT follow the order of its VALUES, as bulk_create relies on too.
            ids = ", ".join(f"(SELECT array_agg(id ORDER BY id) FROM r{i})" for i in range(len(inserts)))
            cursor.execute(f"WITH {parts} SELECT {ids}", [p for insert in inserts for p in insert.params])
            written = cursor.fetchone()
        else:
            written = []
            for insert in inserts:
                cursor.execute(insert.sql, insert.params)
                written.append([value for (value,) in cursor.fetchall()])
    for group, ids in zip(groups.values(), written, strict=True):
        for row, pk in zip(group, ids, strict=True):
            row.pk = pk
            row._state.adding, row._state.db = False, connection.alias
