"""Sessions' pseudonym mappings in the database: the store agents.privacy reads and extends on every LLM call of a
provider that pseudonymises.

Numbering stays consistent across workers without a lock: new rows are inserted with the next free number of
their kind, conflicts ignored; a value another worker mapped first keeps its pseudonym, and a value whose number
another worker took is inserted again with the next one.
"""

from __future__ import annotations

import uuid

from agents.privacy.pseudonyms import Pseudonym as Entry
from tarsy.models import Pseudonym

MAX_ROUNDS = 10  # each round maps at least one value; contention beyond this is a bug, not a race


def pseudonyms_load(session_id: str) -> list[Entry]:
    return [Entry(kind=kind, number=number, value=value) for kind, number, value in
            Pseudonym.objects.filter(session_id=uuid.UUID(str(session_id))).values_list("kind", "number", "value")]


def pseudonyms_add(session_id: str, found: list[tuple[str, str]]) -> list[Entry]:
    """Map each new (kind, value) to the next number of its kind; return the session's whole mapping."""
    pending = {value: kind for kind, value in found}
    for _ in range(MAX_ROUNDS):
        entries = pseudonyms_load(session_id)
        mapped = {e.value for e in entries}
        pending = {value: kind for value, kind in pending.items() if value not in mapped}
        if not pending:
            return entries
        top: dict[str, int] = {}
        for entry in entries:
            top[entry.kind] = max(top.get(entry.kind, 0), entry.number)
        rows = []
        for value, kind in pending.items():
            top[kind] = top.get(kind, 0) + 1
            rows.append(Pseudonym(session_id=uuid.UUID(str(session_id)), kind=kind, number=top[kind], value=value))
        Pseudonym.objects.bulk_create(rows, ignore_conflicts=True)
    raise RuntimeError(f"could not map {len(pending)} identifiers of session {session_id}")


def pseudonyms_adopt(*, session_id: str, texts: list[str], from_sessions: list[str]) -> None:
    """Recalled memories were written in other sessions: the identifiers those sessions mapped that the texts name
    become this session's too, so the model sees them as placeholders like its own."""
    joined = "\n".join(texts)
    sources = {uuid.UUID(str(s)) for s in from_sessions if s} - {uuid.UUID(str(session_id))}
    if not sources or not joined:
        return
    found = [(kind, value) for kind, value in Pseudonym.objects.filter(session_id__in=sources)
             .values_list("kind", "value").distinct() if value in joined]
    if found:
        pseudonyms_add(session_id, found)


class DatabaseStore:
    """agents.privacy.policy.PseudonymStore over the Pseudonym table."""

    def load(self, session_id: str) -> list[Entry]:
        return pseudonyms_load(session_id)

    def add(self, session_id: str, found: list[tuple[str, str]]) -> list[Entry]:
        return pseudonyms_add(session_id, found)
