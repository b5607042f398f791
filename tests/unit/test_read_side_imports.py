"""The web side's packages import one way: dashboard, api and the WebSocket consumer → selectors → the
publisher, which stores nothing (services store events, then hand them to it), and none reaches into another
module's private names. Read from the source with `ast`: every import
statement counts, function-level ones included (a lazy import still closes a cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TARSY = Path(__file__).resolve().parents[2] / "tarsy"
# package → packages it must never import
NEVER = {
    "tarsy.streaming": ("tarsy.api", "tarsy.dashboard"),
    # The transport: services store events and hand them to it; it stores nothing, below the read side too.
    "tarsy.streaming.publisher": ("tarsy.selectors", "tarsy.services", "tarsy.models"),
    "tarsy.streaming.fanout": ("tarsy.selectors", "tarsy.services", "tarsy.models"),
    "tarsy.selectors": ("tarsy.api", "tarsy.dashboard", "tarsy.services"),  # reads only: no writer (errors aside)
    "tarsy.api": ("tarsy.dashboard",),
    "tarsy.dashboard": ("tarsy.api",),  # what both need lives in tarsy.web or the selectors
    "tarsy.web": ("tarsy.api", "tarsy.dashboard"),
}
# The one domain error type every layer raises (STYLE 6) is no writer.
SHARED = ("tarsy.services.errors",)


def _module(path: Path) -> str:
    parts = path.relative_to(TARSY.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import in the file, relative ones resolved."""
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[: len(base) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found.append((module, [alias.name for alias in node.names], node.lineno))
    return found


def _files(package: str) -> list[Path]:
    path = TARSY.parent / package.replace(".", "/")
    return [path.with_suffix(".py")] if path.with_suffix(".py").is_file() else sorted(path.rglob("*.py"))


@pytest.mark.parametrize("package", sorted(NEVER))
def test_no_import_against_the_layering(package):
    wrong = [f"{path.relative_to(TARSY.parent)}:{line} imports {module}"
             for path in _files(package) for module, _, line in _imports(path)
             if module.startswith(NEVER[package]) and module not in SHARED]
    assert wrong == []


def test_no_module_imports_another_modules_private_names():
    private = [f"{path.relative_to(TARSY.parent)}:{line} takes {name} from {module}"
               for path in _files("tarsy") for module, names, line in _imports(path)
               if module.startswith("tarsy") for name in names if name.startswith("_")]
    assert private == []


def test_the_scan_sees_function_level_and_relative_imports(tmp_path, monkeypatch):
    fake = tmp_path / "tarsy" / "streaming"
    fake.mkdir(parents=True)
    (fake / "auth.py").write_text("def f():\n    from ..api.auth import _token\n")
    monkeypatch.setattr(f"{__name__}.TARSY", tmp_path / "tarsy")
    assert _imports(fake / "auth.py") == [("tarsy.api.auth", ["_token"], 2)]
