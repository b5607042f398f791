"""tarsy/'s layer rules hold: the import-linter contracts of pyproject.toml ([tool.importlinter]) are kept.

Each contract is first shown to break on a made-up violation, one import added to a copy of tarsy/ (a lazy one
where that is the point), so a contract that no longer matches the code's modules cannot pass unnoticed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# contract id → (file of tarsy/, source appended to it) that breaks it
VIOLATIONS = {
    "no-cycles": [("tarsy/links.py", "import tarsy.identity\n"),
                  ("tarsy/identity.py", "def later():\n    import tarsy.links\n")],
    "layers": [("tarsy/selectors/events.py", "def later():\n    from tarsy.services import events\n")],
    "task-layer": [("tarsy/api/views.py", "import tarsy.tasks\n")],
    "neutral": [("tarsy/errors.py", "from tarsy.models import AlertSession\n")],
    "serializers": [("tarsy/api/serializers/alerts.py", "from tarsy.services import sessions\n")],
    "web": [("tarsy/web/responses.py", "from tarsy.api import errors\n")],
    "streaming": [("tarsy/streaming/routing.py", "from tarsy.dashboard import views\n")],
    "publisher": [("tarsy/streaming/fanout.py", "from tarsy.selectors import events\n")],
    "consumer": [("tarsy/streaming/consumer.py", "from tarsy.models import Event\n")],
}


def _lint_imports(root: Path, *contracts: str) -> subprocess.CompletedProcess[str]:
    args = [str(LINT_IMPORTS), "--no-cache", *(f"--contract={c}" for c in contracts)]
    return subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=300,
                          env={"PATH": str(LINT_IMPORTS.parent), "PYTHONPATH": str(root)})


def test_every_contract_has_a_violation_shown_below():
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert sorted(c["id"] for c in contracts) == sorted(VIOLATIONS)


@pytest.fixture(scope="module")
def tarsy_copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("copy")
    shutil.copy(ROOT / "pyproject.toml", root)
    shutil.copytree(ROOT / "tarsy", root / "tarsy", ignore=shutil.ignore_patterns("__pycache__", "static"))
    return root


@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_a_violation_breaks_its_contract(tarsy_copy, contract):
    originals = {}
    for name, source in VIOLATIONS[contract]:
        path = tarsy_copy / name
        originals[path] = path.read_text()
        path.write_text(originals[path] + "\n" + source)
    try:
        result = _lint_imports(tarsy_copy, contract)
    finally:
        for path, text in originals.items():
            path.write_text(text)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "0 kept, 1 broken" in result.stdout


def test_tarsy_keeps_every_contract():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(VIOLATIONS)} kept, 0 broken" in result.stdout
