"""Which calls write a model, read from the source with `ast` (nothing is imported): only services may write.

Model writes (the heuristic). A call `<receiver>.<method>(…)` is a write when
  - the method is `bulk_create`, `bulk_update`, `get_or_create`, `update_or_create`, `create_user` or
    `create_superuser` (names nothing else in the code base uses), whatever the receiver; or
  - the method is `create`, `update` or `delete` and the receiver is ORM-rooted: its chain of attributes and
    calls passes through a manager attribute (`objects`, `all_objects`, `_default_manager`, `_base_manager`)
    or a queryset method call (`filter`, `exclude`, `all`, `select_for_update`, …), or it is a name the same
    file assigns such an expression to (`qs = X.objects.filter(…)`; `qs.update(…)`); or
  - the method is `save` or `delete` called without positional arguments, on any receiver: a model instance
    (or a DRF serializer, or a form — writes too) takes keyword arguments only.
So `kwargs.update(a=1)`, `d.update(other)`, `cache.delete(key)`, `image.save(path)` are not writes, while
`Stage.objects.create(…)`, `Stage.objects.filter(…).update(…)`, `stage.save(update_fields=…)`, `row.delete()`
and `stage.executions.all().delete()` are. Not seen: an update through a related manager without a queryset
call (`stage.executions.update(…)`), or through a queryset passed in as an argument; raw SQL.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MANAGERS = frozenset({"objects", "all_objects", "_default_manager", "_base_manager"})
QUERYSET_METHODS = frozenset({
    "filter", "exclude", "all", "select_for_update", "select_related", "prefetch_related", "order_by", "annotate",
    "alias", "only", "defer", "using", "distinct", "none", "reverse", "extra", "complex_filter",
})
ANY_RECEIVER_WRITES = frozenset({"bulk_create", "bulk_update", "get_or_create", "update_or_create", "create_user",
                                 "create_superuser"})
ORM_ROOTED_WRITES = frozenset({"create", "update", "delete"})
ARGLESS_WRITES = frozenset({"save", "delete"})


@dataclass(frozen=True)
class Write:
    path: Path
    line: int
    call: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.call}"


def _chain(node: ast.expr) -> Iterator[ast.expr]:
    """The receiver and everything it is built on: `a.b(x).c` → a.b(x).c, a.b(x), a.b, a."""
    while True:
        yield node
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return


def _orm_rooted(node: ast.expr, orm_names: set[str]) -> bool:
    for link in _chain(node):
        if isinstance(link, ast.Attribute) and link.attr in MANAGERS:
            return True
        if isinstance(link, ast.Call) and isinstance(link.func, ast.Attribute) and link.func.attr in QUERYSET_METHODS:
            return True
        if isinstance(link, ast.Name) and link.id in orm_names:
            return True
    return False


def _orm_names(tree: ast.AST) -> set[str]:
    """Names the file assigns an ORM-rooted expression to (to a fixed point: `b = a.filter(…)` after `a = …`)."""
    names: set[str] = set()
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign) and n.value is not None]
    changed = True
    while changed:
        changed = False
        for node in assigns:
            if not _orm_rooted(node.value, names):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id not in names:
                    names.add(target.id)
                    changed = True
    return names


def model_writes(path: Path, source: str | None = None) -> list[Write]:
    tree = ast.parse(path.read_text() if source is None else source, filename=str(path))
    orm_names = _orm_names(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, receiver = node.func.attr, node.func.value
        positional = bool(node.args)
        if (method in ANY_RECEIVER_WRITES
                or (method in ORM_ROOTED_WRITES and _orm_rooted(receiver, orm_names))
                or (method in ARGLESS_WRITES and not positional)):
            found.append(Write(path, node.lineno, ast.unparse(node.func)))
    return found
