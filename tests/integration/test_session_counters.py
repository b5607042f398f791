"""A session's counters (its SessionCounters row) are raised and read back in one statement, on PostgreSQL and SQLite
alike; an iteration's token totals go in the statement that numbers its events."""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tarsy.models import AlertSession, SessionCounters
from tarsy.services.citations import evidence_id_issue
from tarsy.services.counters import CountersChange, session_counter_raise, session_counters_change
from tarsy.services.events import batched_events, publish
from tarsy.services.intake.alerts import session_submit
from tarsy.streaming.publisher import session_channel

pytestmark = pytest.mark.django_db(transaction=True)

TOTALS = {"input_tokens": 100, "output_tokens": 20, "thinking_tokens": 5, "total_tokens": 125, "cached_tokens": 40,
          "cost_usd": Decimal("0.0125"), "unpriced_calls": 1}


def test_a_session_is_created_with_its_counters_row():
    session = session_submit(data={"alert": "counted"})
    counters = SessionCounters.objects.get(session_id=session.id)
    assert (counters.event_seq, counters.evidence_count, counters.total_tokens) == (1, 0, 0)  # its first event


def test_a_counter_is_raised_by_the_amount_and_its_new_value_returned_in_one_statement():
    session = session_submit(data={"alert": "counted"})
    before = SessionCounters.objects.get(session_id=session.id).event_seq
    with CaptureQueriesContext(connection) as queries:
        assert session_counter_raise(session_id=session.id, counter="event_seq", by=3) == before + 3
    assert len(queries) == 1
    assert session_counter_raise(session_id=str(session.id), counter="event_seq") == before + 4  # an id as text
    assert SessionCounters.objects.get(session_id=session.id).event_seq == before + 4


def test_an_iterations_totals_and_its_event_numbers_land_in_one_statement():
    session = session_submit(data={"alert": "counted"})
    now = timezone.now()
    change = CountersChange(session.id, add=TOTALS, assign={"last_interaction_at": now})
    with CaptureQueriesContext(connection) as queries, transaction.atomic(), batched_events(change=change):
        publish("timeline.created", {"n": 1}, session_id=session.id)
        publish("timeline.created", {"n": 2}, session_id=session.id)
    counter_writes = [q["sql"] for q in queries if "sessioncounters" in q["sql"].lower()]
    assert len(counter_writes) == 1, counter_writes  # numbering and totals: one statement
    counters = SessionCounters.objects.get(session_id=session.id)
    assert counters.event_seq == 3
    assert {name: getattr(counters, name) for name in TOTALS} == TOTALS
    assert counters.last_interaction_at == now
    assert list(session.events.filter(channel=session_channel(session.id)).order_by("seq")
                .values_list("seq", flat=True)) == [1, 2, 3]


def test_totals_without_events_are_applied_on_their_own_and_add_up():
    session = session_submit(data={"alert": "counted"})
    with transaction.atomic(), batched_events(change=CountersChange(session.id, add=TOTALS)):
        pass
    session_counters_change(CountersChange(session.id, add={"total_tokens": 5, "cost_usd": Decimal("0.5")}))
    counters = SessionCounters.objects.get(session_id=session.id)
    assert (counters.total_tokens, counters.cost_usd, counters.event_seq) == (130, Decimal("0.5125"), 1)
    assert counters.last_interaction_at is None  # set only when a change assigns it


def test_a_block_that_raises_adds_nothing():
    session = session_submit(data={"alert": "counted"})
    with pytest.raises(RuntimeError), transaction.atomic(), batched_events(change=CountersChange(session.id,
                                                                                                 add=TOTALS)):
        publish("timeline.created", {}, session_id=session.id)
        raise RuntimeError
    counters = SessionCounters.objects.get(session_id=session.id)
    assert (counters.event_seq, counters.total_tokens) == (1, 0)


def test_a_session_made_without_its_counters_row_gets_it_at_the_first_raise():
    session = AlertSession.objects.create(alert_data="x", alert_type="kubernetes", chain_id="kubernetes")
    assert session_counter_raise(session_id=session.id, counter="event_seq", by=2) == 2
    session_counters_change(CountersChange(session.id, add={"total_tokens": 7}))
    counters = SessionCounters.objects.get(session_id=session.id)
    assert (counters.event_seq, counters.evidence_count, counters.total_tokens) == (2, 0, 7)


def test_evidence_ids_follow_one_another_per_session():
    first, second = session_submit(data={"alert": "a"}), session_submit(data={"alert": "b"})
    assert [evidence_id_issue(session_id=first.id) for _ in range(2)] == ["E1", "E2"]
    assert evidence_id_issue(session_id=second.id) == "E1"


def test_a_missing_session_is_an_error_not_a_number():
    with pytest.raises(AlertSession.DoesNotExist, match="is gone"):
        session_counter_raise(session_id=uuid.uuid4(), counter="evidence_count")
    session_counters_change(CountersChange(uuid.uuid4(), add={"total_tokens": 1}))  # nothing to add to
    assert not SessionCounters.objects.exists()


def test_only_a_counter_is_raised_and_only_counters_fields_change():
    session = session_submit(data={"alert": "counted"})
    with pytest.raises(ValueError, match="no counter"):
        session_counter_raise(session_id=session.id, counter="total_tokens")
    with pytest.raises(ValueError, match="no counter"):
        session_counters_change(CountersChange(session.id, add={"status": 1}))


def test_counters_go_with_their_session():
    session = session_submit(data={"alert": "counted"})
    AlertSession.all_objects.filter(id=session.id).delete()
    assert not SessionCounters.objects.filter(session_id=session.id).exists()
