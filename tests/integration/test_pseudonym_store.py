"""Sessions' pseudonym mappings on the real database: stable, numbered per kind, consistent under concurrent
workers, and separate per session."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from tarsy.models import Pseudonym
from tarsy.services.intake.alerts import session_submit
from tarsy.services.pseudonyms import pseudonyms_add, pseudonyms_adopt, pseudonyms_load

pytestmark = [pytest.mark.django_db(transaction=True)]


def _placeholders(session_id) -> dict[str, str]:
    return {e.value: e.placeholder for e in pseudonyms_load(str(session_id))}


def test_a_mapped_value_never_changes_placeholder_and_numbers_count_per_kind():
    session = session_submit(data="x", alert_type="kubernetes")
    pseudonyms_add(str(session.id), [("pod", "api-1"), ("pod", "api-2"), ("ns", "shop")])
    pseudonyms_add(str(session.id), [("pod", "api-2"), ("svc", "api-1"), ("pod", "api-3")])
    assert _placeholders(session.id) == {"api-1": "<pod:1>", "api-2": "<pod:2>", "shop": "<ns:1>",
                                         "api-3": "<pod:3>"}


def test_workers_mapping_at_once_agree_on_one_number_per_value():
    session = session_submit(data="x", alert_type="kubernetes")
    start = threading.Barrier(4)

    def work(index: int) -> None:
        try:
            start.wait()
            pseudonyms_add(str(session.id), [("pod", f"web-{index}-{n}") for n in range(5)] + [("pod", "shared")])
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    numbers = sorted(Pseudonym.objects.filter(session=session).values_list("number", flat=True))
    assert numbers == list(range(1, 22))  # 4 x 5 values and "shared" once


def test_a_recalled_memory_brings_the_names_its_session_mapped_and_no_others():
    a = session_submit(data="x", alert_type="kubernetes")
    b = session_submit(data="y", alert_type="kubernetes")
    pseudonyms_add(str(a.id), [("pod", "api-7f9c"), ("pod", "db-0"), ("ns", "shop")])
    pseudonyms_add(str(b.id), [("ns", "shop")])
    pseudonyms_adopt(session_id=str(b.id), texts=["api-7f9c in shop ran out of memory"], from_sessions=[str(a.id)])
    assert _placeholders(b.id) == {"shop": "<ns:1>", "api-7f9c": "<pod:1>"}
