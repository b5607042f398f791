"""The quota of active memories per alert type (memory.max_per_alert_type): past it, the memories least recently
learned, confirmed or recalled — and of those the least used — are retired, each with the reason on its record.

Called in the transaction that added or reactivated memories, so the quota holds at every commit; it locks only
the rows it retires.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import F
from django.db.models.functions import Coalesce, Greatest

from tarsy.config import get_config
from tarsy.models import Memory, MemoryChangeAction, MemoryState

from .memory_changes import ACTOR_QUOTA, memory_change_record, memory_snapshot


def memory_quota_enforce(*, alert_type: str, keep_ids: Iterable[int] = ()) -> list[Memory]:
    """Retire the active memories of `alert_type` past the quota, oldest and least used first (never those of
    `keep_ids`: what this transaction just learned or a person just reactivated). Returns the retired."""
    quota = get_config().memory.max_per_alert_type
    active = Memory.objects.filter(alert_type=alert_type, state=MemoryState.ACTIVE)
    excess = active.count() - quota
    if excess <= 0:
        return []
    last_active = Greatest("confirmed_at", Coalesce("last_used_at", "confirmed_at"))
    victims = list(active.exclude(id__in=list(keep_ids)).select_for_update()
                   .order_by(last_active.asc(), F("use_count").asc(), "id")[:excess])
    reason = (f"over the quota of {quota} active memories for alert type {alert_type or '(any)'}: among the "
              "least recently confirmed or recalled, and least used")
    for memory in victims:
        before = memory_snapshot(memory)
        memory.state, memory.retired_reason = MemoryState.RETIRED, reason
        memory.save(update_fields=["state", "retired_reason", "updated_at"])
        memory_change_record(memory=memory, action=MemoryChangeAction.RETIRED, actor=ACTOR_QUOTA, before=before,
                             reason=reason)
    return victims
