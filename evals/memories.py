"""Memory fixtures: what TARSy remembers of a prior incident, written into the run's database before the run.

Each fixture becomes a Memory through `tarsy.services.memories.memory_create` (masked and validated like one a
person writes), with its fixture session as provenance. Loading is idempotent: a fixture whose memory is already
active is left as it is, and an active memory of a fixture session whose text the scenario no longer declares is
retired, so an eval database reused across runs recalls exactly what the scenarios declare.
"""

from __future__ import annotations

from agents.mcp.masking.boundary import mask_text
from agents.memory.reflection import MAX_MEMORY_CHARS
from tarsy.models import Memory, MemoryState
from tarsy.services.memories import memory_create, memory_retire

from .scenario import MemoryFixture, Scenario

RETIRED_REASON = "no longer declared by an eval scenario's memories.yaml"


def _key(text: str, session: str) -> tuple[str, str]:
    return " ".join(text.split()), session


def _stored_text(fixture: MemoryFixture) -> str:
    return mask_text(" ".join(fixture.text.split()))[:MAX_MEMORY_CHARS]  # as memory_create stores it


def load_memories(scenarios: list[Scenario]) -> list[Memory]:
    """The memories of every scenario's fixtures, created where missing; returns them in fixture order."""
    fixtures = [f for s in scenarios for f in s.memories]
    if not fixtures:
        return []
    sessions = {str(f.session) for f in fixtures}
    wanted = {_key(_stored_text(f), str(f.session)) for f in fixtures}
    existing: dict[tuple[str, str], Memory] = {}
    for memory in Memory.objects.filter(state=MemoryState.ACTIVE, session__isnull=True):
        for source in memory.source_sessions or []:
            if source in sessions:
                key = _key(memory.text, source)
                if key in wanted:
                    existing.setdefault(key, memory)
                else:
                    memory_retire(memory_id=memory.id, reason=RETIRED_REASON)
    loaded = []
    for fixture in fixtures:
        key = _key(_stored_text(fixture), str(fixture.session))
        if key not in existing:
            existing[key] = memory_create(kind=fixture.kind, text=fixture.text, labels=fixture.labels,
                                          confidence=fixture.confidence, source_sessions=[str(fixture.session)],
                                          evidence_ids=fixture.evidence)
        loaded.append(existing[key])
    return loaded
