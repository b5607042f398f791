"""Migration 0034: a session's counters move from its row to a SessionCounters row with their values, and back when
the migration is reversed."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

BEFORE, AFTER = [("tarsy", "0033_pseudonyms")], [("tarsy", "0034_session_counters")]
SEEN = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
VALUES = {"input_tokens": 1000, "output_tokens": 200, "thinking_tokens": 50, "total_tokens": 1250,
          "cached_tokens": 300, "cost_usd": Decimal("0.0123456789"), "unpriced_calls": 2, "event_seq": 17,
          "evidence_count": 4, "last_interaction_at": SEEN}


def _migrate(targets):
    """Migrate to `targets`; the models as they are there."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def test_counters_move_to_their_own_row_and_back():
    apps = _migrate(BEFORE)
    try:
        Session = apps.get_model("tarsy", "AlertSession")
        counted = Session.objects.create(id=uuid.uuid4(), alert_data="{}", alert_type="kubernetes",
                                         chain_id="kubernetes", **VALUES)
        fresh = Session.objects.create(id=uuid.uuid4(), alert_data="{}", alert_type="kubernetes",
                                       chain_id="kubernetes")

        apps = _migrate(AFTER)
        Session, Counters = apps.get_model("tarsy", "AlertSession"), apps.get_model("tarsy", "SessionCounters")
        moved = Counters.objects.get(session_id=counted.id)
        assert {name: getattr(moved, name) for name in VALUES} == VALUES
        assert Counters.objects.get(session_id=fresh.id).event_seq == 0
        assert "total_tokens" not in {f.name for f in Session._meta.get_fields()}

        Counters.objects.filter(session_id=fresh.id).update(event_seq=3, total_tokens=9)  # raised since
        Session = _migrate(BEFORE).get_model("tarsy", "AlertSession")
        back = Session.objects.get(id=counted.id)
        assert {name: getattr(back, name) for name in VALUES} == VALUES
        assert Session.objects.values_list("event_seq", "total_tokens").get(id=fresh.id) == (3, 9)
        assert "tarsy_sessioncounters" not in connection.introspection.table_names()
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
