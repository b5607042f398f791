"""A queryset compiled to SQL once per process, then run with a new key.

Django compiles a queryset to SQL at every evaluation. For the statement every agent iteration starts with (the
claim: an execution with its stage, its session and four annotations, about a hundred columns and three
subqueries) that compilation costs more Python than everything else the claim does, although the SQL never
changes: only the execution id does. `Precompiled` compiles the queryset once, with a sentinel key, remembers
where the key sits among the parameters, and runs the same SQL with the real key. Rows become model instances
the way Django's ModelIterable makes them (select_related objects and annotations included), so callers see
exactly what the queryset would have returned. What that takes is worked out once too: the columns' converters
(Django asks every one of the hundred columns for them at each evaluation), the model's field names and the
related objects' populators.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators
from django.db.transaction import TransactionManagementError

SENTINEL = uuid.UUID("00000000-5e17-4e1e-8000-000000000000")  # stands for the key while compiling


class Precompiled:
    """`build(key)` returns the queryset for one key (a UUID primary key); it is compiled at its first use on
    each database connection's vendor, and read-only afterwards (safe to share between threads). `wrap`, when
    given, rewrites the compiled SQL once (e.g. to put a WITH clause before it, whose parameters the caller
    passes as `before`)."""

    def __init__(self, build: Callable[[Any], QuerySet], wrap: Callable[[str], str] | None = None):
        self._build = build
        self._wrap = wrap
        self._compiled: dict[tuple[str, str], tuple] = {}
        self._lock = threading.Lock()

    def _compile(self, alias: str, vendor: str) -> tuple:
        compiled = self._compiled.get((alias, vendor))
        if compiled is None:
            with self._lock:
                queryset = self._build(SENTINEL)
                compiler = queryset.query.get_compiler(using=alias)
                sql, params = compiler.as_sql()
                positions = [i for i, p in enumerate(params) if _is_sentinel(p)]
                if len(positions) == 0:
                    raise ValueError("the key does not reach the compiled statement's parameters")
                if self._wrap is not None:
                    sql = self._wrap(sql)
                compiled = self._compiled[(alias, vendor)] = (compiler, sql, list(params), positions,
                                                     _Hydration(compiler, alias))
        return compiled

    def __call__(self, key: Any, using: str = "default", before: tuple = ()) -> list[Model]:
        connection = connections[using]  # once: each lookup goes through a thread-local
        compiler, sql, params, positions, hydration = self._compile(using, connection.vendor)
        if compiler.query.select_for_update and connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        params = list(params)
        for position in positions:
            params[position] = _like(params[position], key)
        with connection.cursor() as cursor:
            cursor.execute(sql, [*before, *params])
            rows = cursor.fetchall()
        return hydration.instances(rows)


def _is_sentinel(param: Any) -> bool:
    return param == SENTINEL or param == SENTINEL.hex or param == str(SENTINEL)


def _like(template: Any, key: Any) -> Any:
    """The key in the form the compiler prepared the sentinel in (a UUID, or its hex on SQLite)."""
    value = key if isinstance(key, uuid.UUID) else uuid.UUID(str(key))
    if isinstance(template, uuid.UUID):
        return value
    return value.hex if template == SENTINEL.hex else str(value)


class _Hydration:
    """Django's ModelIterable for rows already fetched with the compiler's SQL, its per-query work done once:
    what `results_iter` and `ModelIterable` work out again at every evaluation (converters, the model's field
    names, the related populators) depends only on the compiled query. Converters are given the compiling
    connection, which they only read (its vendor, features and operations)."""

    def __init__(self, compiler, db: str):
        select, klass_info = compiler.select, compiler.klass_info
        if compiler.has_composite_fields([s[0] for s in select[:compiler.col_count]]):
            raise ValueError("composite keys are not supported")  # results_iter's regrouping is not repeated here
        self.connection = compiler.connection
        self.db = db
        self.converters = list(compiler.get_converters([s[0] for s in select[:compiler.col_count]]).items())
        self.model = klass_info["model"]
        select_fields = klass_info["select_fields"]
        self.start, self.end = select_fields[0], select_fields[-1] + 1
        self.init_list = [f[0].target.attname for f in select[self.start:self.end]]
        self.related_populators = get_related_populators(klass_info, select, db)
        self.annotations = list((compiler.annotation_col_map or {}).items())

    def instances(self, rows: list[tuple]) -> list[Model]:
        objs = []
        connection, start, end = self.connection, self.start, self.end
        for row in rows:
            row = list(row)
            for pos, (convs, expression) in self.converters:
                value = row[pos]
                for converter in convs:
                    value = converter(value, expression, connection)
                row[pos] = value
            obj = self.model.from_db(self.db, self.init_list, row[start:end])
            for populator in self.related_populators:
                populator.populate(row, obj)
            for attr_name, col_pos in self.annotations:
                setattr(obj, attr_name, row[col_pos])
            objs.append(obj)
        return objs
