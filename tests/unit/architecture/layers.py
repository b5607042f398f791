"""Static checks of tarsy/'s layering, read from the source with `ast` (nothing is imported).

Import graph. A node per file under the package; an edge for every import statement anywhere in the file —
module level, inside functions, under `if TYPE_CHECKING` — and for `importlib.import_module("…")` /
`__import__("…")` with a literal name. `from a.b import c` is an edge to `a.b.c` when that is a file of the
package, else to `a.b`; relative imports are resolved against the file's package. The implicit import of a
module's parent packages is not an edge: every `from tarsy.x import …` runs tarsy/__init__.py first, and
counting that would make any package whose __init__ imports a submodule look cyclic.

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


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name → file, for every .py under `root` (the directory of `package`)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join([package, *parts])] = path
    return modules


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _imported_names(tree: ast.AST, module: str, path: Path) -> Iterator[tuple[str, list[str], int]]:
    """(base module, names imported from it, line) for every import in the file."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = _package_of(module, path).split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base, [a.name for a in node.names], node.lineno
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            yield node.args[0].value, [], node.lineno


def import_graph(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module → {imported module of the package: first line importing it}."""
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges: dict[str, int] = {}
        tree = ast.parse(path.read_text(), filename=str(path))
        for base, names, line in _imported_names(tree, module, path):
            targets = [f"{base}.{n}" for n in names if f"{base}.{n}" in modules]
            if len(targets) < len(names) or not names:
                targets.append(base)
            for target in targets:
                if target in modules and target != module:
                    edges.setdefault(target, line)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


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
