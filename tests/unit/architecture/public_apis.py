"""Static checks that the product uses its frameworks through their public APIs, read from the source with `ast`.

What is found, per file:
  - an import of `uvicorn.protocols` (uvicorn's implementation modules, not its ASGI interface);
  - a custom database backend: an `"ENGINE"` key given a literal that is not one of `django.db.backends.*`, or a
    class named `DatabaseWrapper`;
  - an override of a framework's private method: a `def _name` (not a dunder) in a class whose base, resolved
    through the file's imports (and through classes of the same file), is a class of FRAMEWORKS that already has
    an attribute of that name;
  - a fork of Django's request handling: a subclass of Django's `BaseHandler` (ASGIHandler, WSGIHandler) that
    defines one of HANDLER_CORE;
  - work on compiled SQL: a use (or an import) of the query compiler's internals (COMPILER_INTERNALS); a
    `.replace(` call in a function that also calls `.as_sql(` or `.sql_with_params(` (a custom expression's own
    `def as_sql` may: that is the documented way to write one); or a `.replace(` whose first argument is a
    string naming an SQL clause (`sql.replace(f"FROM {table} ", …)`), wherever the SQL came from;
  - a read of a queryset's `query` object (`qs.query.order_by`): Django's SQL tree, not its QuerySet API;
  - a use of a database connection's backend internals (BACKEND_INTERNALS: `connection.ops.quote_name`);
  - an override of a framework's property (`def fields` under `@property` in a DRF serializer): the framework
    caches and builds it per instance; its documented hook (`get_fields`) is the place to change it;
  - an import of a private name (`_x`) from a module of the product (PRODUCT_PACKAGES, or a relative import):
    what a module keeps private may change without its callers knowing.
Bases are imported to see what they define; nothing of the scanned code is imported.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from functools import cached_property as functools_cached_property
from pathlib import Path

FRAMEWORKS = ("django", "kombu", "celery", "uvicorn", "channels", "rest_framework", "psycopg", "redis")
HANDLER_CORE = frozenset({"handle", "__call__", "get_response", "get_response_async", "load_middleware"})
COMPILER_INTERNALS = frozenset({"get_compiler", "klass_info", "get_converters", "get_related_populators",
                                "results_iter", "annotation_col_map", "col_count", "sql_with_params"})
COMPILED_SQL = frozenset({"as_sql", "sql_with_params"})
BACKEND_INTERNALS = frozenset({"ops"})  # the backend's DatabaseOperations: SQL quoting and casts, undocumented
PROPERTIES = frozenset({"property", "cached_property", "functools.cached_property",
                        "django.utils.functional.cached_property"})
PRODUCT_PACKAGES = frozenset({"tarsy", "agents", "controllers"})
SQL_CLAUSES = ("SELECT ", "FROM ", "WHERE ", "JOIN ", "UPDATE ", "INSERT ", "WITH ", "ORDER BY ", "RETURNING ")


def python_files(*roots: Path) -> Iterator[Path]:
    for root in roots:
        yield from sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted path, for every import in the file."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                    alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _load(path: str) -> object | None:
    """The object at a dotted path (a module's attribute), or None when it cannot be imported."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def _framework_bases(cls: ast.ClassDef, imported: dict[str, str], local: dict[str, ast.ClassDef],
                     seen: frozenset[str] = frozenset()) -> list[type]:
    """The framework classes `cls` derives from, through its bases and the same file's classes."""
    found: list[type] = []
    for base in cls.bases:
        name = _dotted(base)
        if name is None:
            continue
        head, _, rest = name.partition(".")
        if head in local and not rest and head not in seen:
            found += _framework_bases(local[head], imported, local, seen | {head})
            continue
        path = imported.get(head, "") + (f".{rest}" if rest else "")
        if path.split(".")[0] in FRAMEWORKS:
            obj = _load(path)
            if isinstance(obj, type):
                found.append(obj)
    return found


def _is_connection(node: ast.expr) -> bool:
    """`connection`, `x.connection`, `connections[alias]`: Django's database connection handles."""
    if isinstance(node, ast.Subscript):
        node = node.value
        name = "connections"
    else:
        name = "connection"
    return (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name)


def _is_property(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(_dotted(d) in PROPERTIES for d in func.decorator_list)


def _class_problems(tree: ast.Module, imported: dict[str, str]) -> Iterator[tuple[int, str]]:
    from django.core.handlers.base import BaseHandler
    from django.utils.functional import cached_property

    local = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    for cls in local.values():
        if cls.name == "DatabaseWrapper":
            yield cls.lineno, f"custom database backend class {cls.name}"
        bases = _framework_bases(cls, imported, local)
        if not bases:
            continue
        for node in cls.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            name = node.name
            private = name.startswith("_") and not name.endswith("__")
            if private and any(hasattr(base, name) for base in bases):
                yield node.lineno, f"{cls.name}.{name} overrides a framework's private method"
            if not private and _is_property(node) and any(
                    isinstance(inspect.getattr_static(base, name, None),
                               property | cached_property | functools_cached_property) for base in bases):
                yield node.lineno, f"{cls.name}.{name} overrides a framework's property"
            if name in HANDLER_CORE and any(issubclass(base, BaseHandler) for base in bases):
                yield node.lineno, f"{cls.name}.{name} forks Django's request handler"


def _names_sql_clause(node: ast.expr) -> bool:
    parts = node.values if isinstance(node, ast.JoinedStr) else [node]
    return any(isinstance(p, ast.Constant) and isinstance(p.value, str) and any(c in p.value.upper()
                                                                                 for c in SQL_CLAUSES)
               for p in parts)


def _function_problems(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for call in ast.walk(tree):
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "replace"
                and call.args and _names_sql_clause(call.args[0])):
            yield call.lineno, "edits SQL text with str.replace"
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef) or func.name in COMPILED_SQL:
            continue
        calls = [n for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
        if any(c.func.attr in COMPILED_SQL for c in calls):
            for call in calls:
                if call.func.attr == "replace":
                    yield call.lineno, f"{func.name} edits compiled SQL as a string"


def problems(source: str) -> list[tuple[int, str]]:
    """(line, what) for every use of a framework's internals in one file's source."""
    tree = ast.parse(source)
    imported = _imported_names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m == "uvicorn.protocols" or m.startswith("uvicorn.protocols.") for m in modules):
                found.append((node.lineno, "imports uvicorn.protocols"))
            if isinstance(node, ast.ImportFrom):
                found += [(node.lineno, f"uses the query compiler's {a.name}") for a in node.names
                          if a.name in COMPILER_INTERNALS]
                if node.level or (node.module or "").split(".")[0] in PRODUCT_PACKAGES:
                    source = "." * node.level + (node.module or "")
                    found += [(node.lineno, f"takes the private name {a.name} from {source}") for a in node.names
                              if a.name.startswith("_") and not a.name.endswith("__")]
        elif isinstance(node, ast.Attribute) and node.attr in COMPILER_INTERNALS:
            found.append((node.lineno, f"uses the query compiler's {node.attr}"))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "query":
            found.append((node.lineno, f"reads the queryset's query.{node.attr}"))
        elif isinstance(node, ast.Attribute) and node.attr in BACKEND_INTERNALS and _is_connection(node.value):
            found.append((node.lineno, f"uses the database connection's {node.attr}"))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                found += _engine_problem(key, value)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            found += _engine_problem(node.targets[0].slice, node.value)
    found += _class_problems(tree, imported)
    found += _function_problems(tree)
    return sorted(set(found))


def _engine_problem(key: ast.expr | None, value: ast.expr) -> list[tuple[int, str]]:
    if isinstance(key, ast.Constant) and key.value == "ENGINE" and isinstance(value, ast.Constant) \
            and isinstance(value.value, str) and not value.value.startswith("django.db.backends."):
        return [(value.lineno, f"custom database backend {value.value!r}")]
    return []
