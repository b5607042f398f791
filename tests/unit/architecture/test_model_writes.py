"""Only services write models: every other module of tarsy/ reads, or asks a service to write.

The check (tests/unit/architecture/model_writes.py states the heuristic) is first shown to find writes and to
pass over dict, cache and file calls of the same names, then run on tarsy/.
"""

from __future__ import annotations

from pathlib import Path

from .model_writes import model_writes

TARSY = Path(__file__).resolve().parents[3] / "tarsy"


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


def test_only_services_write_models():
    writes = [str(w) for path in sorted(TARSY.rglob("*.py"))
              if path.relative_to(TARSY).parts[0] not in ("services", "migrations")
              for w in model_writes(path)]
    assert writes == []
