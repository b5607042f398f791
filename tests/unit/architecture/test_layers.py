"""tarsy/'s layering holds: no import cycle, only the task layer imports tarsy.tasks, only services write models.

The checks read the source with `ast` (tests/unit/architecture/layers.py states the rules and the write
heuristic). Each check is first shown to catch a violation in a small made-up package, then run on tarsy/.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .layers import cycles, import_graph, model_writes, module_files

TARSY = Path(__file__).resolve().parents[3] / "tarsy"
# tasks.py turns decisions into tasks; celery.py installs it as the enactor; management commands may start work.
MAY_IMPORT_TASKS = ("tarsy.tasks", "tarsy.celery", "tarsy.management.commands.")


def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    root = tmp_path / "pkg"
    for name, source in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(source))
    return module_files(root, "pkg")


def _tasks_importers(graph: dict[str, dict[str, int]]) -> list[str]:
    return sorted(f"{module} (line {edges['tarsy.tasks']})" for module, edges in graph.items()
                  if "tarsy.tasks" in edges and not module.startswith(MAY_IMPORT_TASKS))


# ---- the checks catch what they look for ------------------------------------------------------------------------

def test_a_cycle_closed_by_a_function_level_import_is_found(tmp_path):
    modules = _package(tmp_path, {
        "a.py": "from pkg.b import thing\n",
        "b.py": "def thing():\n    from . import c\n",
        "c.py": "def later():\n    from pkg import a\n",
        "d.py": "from pkg.a import x\n",  # imports into the cycle without closing one
    })
    assert cycles(import_graph(modules)) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_relative_and_dynamic_imports_are_edges_and_parent_packages_are_not(tmp_path):
    modules = _package(tmp_path, {
        "sub/__init__.py": "from .x import y\n",
        "sub/x.py": "from ..z import w\nimport importlib\nimportlib.import_module('pkg.sub.q')\n",
        "sub/q.py": "",
        "z.py": "import pkg.sub.x\n",
    })
    graph = import_graph(modules)
    assert graph["pkg.sub"] == {"pkg.sub.x": 1}
    assert set(graph["pkg.sub.x"]) == {"pkg.z", "pkg.sub.q"}
    assert cycles(graph) == [["pkg.sub.x", "pkg.z"]]


def test_an_import_of_the_tasks_module_outside_the_task_layer_is_found():
    graph = {"tarsy.pipeline.stages": {"tarsy.tasks": 12}, "tarsy.celery": {"tarsy.tasks": 3},
             "tarsy.management.commands.eval": {"tarsy.tasks": 5}, "tarsy.api.views": {}}
    assert _tasks_importers(graph) == ["tarsy.pipeline.stages (line 12)"]


WRITES = """
from tarsy.models import Stage

def writes(stage, rows, user_model):
    Stage.objects.create(name="x")
    Stage.all_objects.filter(id=1).update(status="done")
    stage.save(update_fields=["status"])
    stage.delete()
    stage.executions.all().delete()
    Stage.objects.bulk_create(rows)
    user_model.objects.get_or_create(username="u")
    pending = Stage.objects.filter(status="pending")
    locked = pending.select_for_update()
    locked.update(status="active")
"""

NOT_WRITES = """
def not_writes(kwargs, cache, image, other, seen):
    kwargs.update(chain_id="c", stage_index=0)
    other.update({"a": 1})
    cache.delete("key")
    image.save("out.png")
    seen.update(x for x in "ab")
    Stage.objects.filter(id=1).first()
    Stage.objects.get(id=1).refresh_from_db()
"""


def test_model_writes_are_found_and_dict_cache_and_file_calls_are_not(tmp_path):
    path = tmp_path / "m.py"
    found = [w.call for w in model_writes(path, WRITES)]
    assert found == ["Stage.objects.create", "Stage.all_objects.filter(id=1).update", "stage.save", "stage.delete",
                     "stage.executions.all().delete", "Stage.objects.bulk_create", "user_model.objects.get_or_create",
                     "locked.update"]
    assert model_writes(path, NOT_WRITES) == []


# ---- tarsy/ ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tarsy_graph() -> dict[str, dict[str, int]]:
    return import_graph(module_files(TARSY, "tarsy"))


def test_tarsy_has_no_import_cycle(tarsy_graph):
    assert "tarsy.pipeline.stages" in tarsy_graph
    assert cycles(tarsy_graph) == []


def test_only_the_task_layer_imports_tarsy_tasks(tarsy_graph):
    assert _tasks_importers(tarsy_graph) == []


def test_the_pipeline_and_services_import_neither_tasks_nor_the_api(tarsy_graph):
    lower = {m: e for m, e in tarsy_graph.items() if m.startswith(("tarsy.pipeline", "tarsy.services"))}
    assert len(lower) > 10
    assert sorted(f"{m} → {t}" for m, edges in lower.items() for t in edges
                  if t == "tarsy.tasks" or t.startswith(("tarsy.api", "tarsy.dashboard"))) == []


def test_services_do_not_import_the_pipeline(tarsy_graph):
    """The pipeline calls services, never the other way round: both take decision values from the neutral
    `tarsy.decisions`, which imports neither."""
    lower = ("tarsy.services", "tarsy.selectors")
    uses = sorted(f"{m} → {t}" for m, edges in tarsy_graph.items() if m.startswith(lower)
                  for t in edges if t.startswith("tarsy.pipeline"))
    assert uses == []
    assert [t for t in tarsy_graph["tarsy.decisions"] if t.startswith(("tarsy.services", "tarsy.pipeline"))] == []


def test_the_websocket_consumer_reads_through_the_selectors(tarsy_graph):
    """The consumer is a transport like the API: its catch-up reads are the selectors', not the models'."""
    consumer = tarsy_graph["tarsy.streaming.consumer"]
    assert "tarsy.selectors.events" in consumer
    assert [t for t in consumer if t.startswith("tarsy.models")] == []
    readers = [m for m, edges in tarsy_graph.items() if "tarsy.selectors.events" in edges]
    assert {"tarsy.api.session_views", "tarsy.dashboard.views", "tarsy.streaming.consumer"} <= set(readers)


def test_only_services_write_models():
    writes = [str(w) for path in sorted(TARSY.rglob("*.py"))
              if path.relative_to(TARSY).parts[0] not in ("services", "migrations")
              for w in model_writes(path)]
    assert writes == []


# Exceptions are the one part of the service layer every layer raises or maps (a selector's bad filter is a 400).
SHARED_ERRORS = "tarsy.services.errors"


def _imports(graph: dict[str, dict[str, int]], importers: tuple[str, ...], targets: tuple[str, ...]) -> list[str]:
    return sorted(f"{m} → {t} (line {line})" for m, edges in graph.items() if m.startswith(importers)
                  for t, line in edges.items() if t.startswith(targets) and t != SHARED_ERRORS)


def test_selectors_import_no_service(tarsy_graph):
    """Reads stand on models alone; services may read through selectors, never the other way round."""
    assert any(m.startswith("tarsy.selectors.") for m in tarsy_graph)
    assert _imports(tarsy_graph, ("tarsy.selectors",), ("tarsy.services",)) == []


def test_serializers_shape_and_import_no_service(tarsy_graph):
    """A serializer shapes what a selector read and the view handed it; a service call in one is a hidden query."""
    assert "tarsy.api.serializers.sessions" in tarsy_graph
    assert _imports(tarsy_graph, ("tarsy.api.serializers",), ("tarsy.services",)) == []


def test_the_dashboard_imports_nothing_of_the_api(tarsy_graph):
    """The dashboard and the API are siblings: what both need lives in a neutral module (tarsy.web, selectors)."""
    assert any(m.startswith("tarsy.dashboard.") for m in tarsy_graph)
    assert _imports(tarsy_graph, ("tarsy.dashboard",), ("tarsy.api",)) == []


def test_the_rules_above_catch_a_violation():
    graph = {"tarsy.selectors.sessions": {"tarsy.services.chats": 7, SHARED_ERRORS: 9},
             "tarsy.dashboard.views": {"tarsy.api.base": 3}, "tarsy.api.views": {"tarsy.services.sessions": 2}}
    assert _imports(graph, ("tarsy.selectors",), ("tarsy.services",)) == [
        "tarsy.selectors.sessions → tarsy.services.chats (line 7)"]
    assert _imports(graph, ("tarsy.dashboard",), ("tarsy.api",)) == ["tarsy.dashboard.views → tarsy.api.base (line 3)"]
    assert _imports(graph, ("tarsy.api.serializers",), ("tarsy.services",)) == []
