"""The transactional outbox's rows: written with the decision, deleted once sent, claimed by the relay.

Rows carry a decision as (kind, fields); tarsy.decisions encodes and decodes them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tarsy.models import OutboxTask


def outbox_add(*, entries: list[tuple[str, dict[str, Any]]]) -> list[int]:
    """Write the decided tasks in the caller's transaction (one INSERT); their ids, in order."""
    rows = OutboxTask.objects.bulk_create([OutboxTask(kind=kind, fields=fields) for kind, fields in entries])
    return [row.id for row in rows]


def outbox_remove(*, ids: list[int]) -> None:
    """Forget the rows of tasks the broker has accepted (one DELETE)."""
    if ids:
        OutboxTask.objects.filter(id__in=ids).delete()


def outbox_waiting(*, before: datetime) -> bool:
    """Whether any row was written before `before` (the relay's cheap look before it claims)."""
    return OutboxTask.objects.filter(created_at__lt=before).exists()


def outbox_claim(*, before: datetime, limit: int) -> list[OutboxTask]:
    """The oldest rows written before `before`, locked for the caller's transaction. Rows another relay holds
    are skipped, so concurrent relays never send one row twice (PostgreSQL; SQLite runs one process)."""
    return list(OutboxTask.objects.select_for_update(skip_locked=True)
                .filter(created_at__lt=before).order_by("id")[:limit])


def outbox_backlog() -> int:
    """Decided tasks not yet handed to the broker."""
    return OutboxTask.objects.count()
