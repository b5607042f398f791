"""The record of every change to a memory: who, when, why, and the changed fields before and after.

Every service that writes a memory calls `memory_change_record` in the same transaction, so no edit, state change
or confidence move happens without its row; the Memories page and `/api/v1/memories/<id>` show them.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from agents.mcp.masking.boundary import mask_text
from tarsy.models import Memory, MemoryChange

# The fields a change record compares: what a person or a reflection may change (not the use counters, which
# every recall moves, nor the embedding, which follows the text).
TRACKED_FIELDS = ("kind", "text", "alert_type", "chain_id", "labels", "confidence", "state", "retired_reason",
                  "evidence_ids", "source_sessions")
ACTOR_REFLECTION = "reflection"
ACTOR_REVIEW = "review"
ACTOR_QUOTA = "quota"
ACTOR_SYSTEM = "tarsy"  # fixtures and scripts that name no one


def memory_snapshot(memory: Memory) -> dict[str, Any]:
    """The tracked fields of a memory as they stand (JSON-ready)."""
    return {name: _plain(getattr(memory, name)) for name in TRACKED_FIELDS}


def _plain(value: Any) -> Any:
    if isinstance(value, list | dict):
        return value.copy()
    return str(value) if not isinstance(value, int | float | bool | type(None)) else value


def memory_change_record(*, memory: Memory, action: str, actor: str, before: dict[str, Any] | None,
                         reason: str = "") -> MemoryChange:
    """Record `memory`'s change from the snapshot `before` (None: it was just made) to its current fields; only
    the fields that differ are kept."""
    after = memory_snapshot(memory)
    if before is None:
        changed_before, changed_after = {}, after
    else:
        names = [name for name in TRACKED_FIELDS if before.get(name) != after[name]]
        changed_before, changed_after = {n: before.get(n) for n in names}, {n: after[n] for n in names}
    return MemoryChange.objects.create(memory=memory, action=action, actor=mask_text(actor or ACTOR_SYSTEM)[:255],
                                       reason=mask_text(reason)[:500], before=changed_before, after=changed_after)


def memory_changes(*, memory_id: Any) -> QuerySet:
    """A memory's record, newest first."""
    return MemoryChange.objects.filter(memory_id=memory_id)
