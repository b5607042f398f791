"""The session row's counters are raised and read back in one statement, on PostgreSQL and SQLite alike."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tarsy.models import AlertSession
from tarsy.services.citations import evidence_id_issue
from tarsy.services.counters import session_counter_raise
from tarsy.services.intake.alerts import session_submit

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_counter_is_raised_by_the_amount_and_its_new_value_returned_in_one_statement():
    session = session_submit(data={"alert": "counted"})
    before = AlertSession.objects.get(id=session.id).event_seq
    with CaptureQueriesContext(connection) as queries:
        assert session_counter_raise(session_id=session.id, counter="event_seq", by=3) == before + 3
    assert len(queries) == 1
    assert session_counter_raise(session_id=str(session.id), counter="event_seq") == before + 4  # an id as text
    assert AlertSession.objects.get(id=session.id).event_seq == before + 4


def test_evidence_ids_follow_one_another_per_session():
    first, second = session_submit(data={"alert": "a"}), session_submit(data={"alert": "b"})
    assert [evidence_id_issue(session_id=first.id) for _ in range(2)] == ["E1", "E2"]
    assert evidence_id_issue(session_id=second.id) == "E1"


def test_a_missing_session_is_an_error_not_a_number():
    with pytest.raises(AlertSession.DoesNotExist, match="is gone"):
        session_counter_raise(session_id=uuid.uuid4(), counter="evidence_count")


def test_only_an_integer_field_is_a_counter():
    session = session_submit(data={"alert": "counted"})
    with pytest.raises(ValueError, match="no counter"):
        session_counter_raise(session_id=session.id, counter="status")
