"""Intake serialises posts only for the look-ups it makes: a chain with dedup waits for another post of the
same alert; a chain without dedup never looks an alert up by fingerprint and does not wait."""

from __future__ import annotations

import threading

import psycopg
import pytest

from tarsy.models import AlertSession
from tarsy.services import occurrences
from tarsy.services.sessions import session_receive
from tests.support import processes

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def _config(scripted_config, dedup):
    chain = {"alert_types": ["kubernetes"], "stages": [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}]}
    if not dedup:
        chain["dedup"] = "off"
    scripted_config({"KubernetesAgent": ["Thought: done.\nFinal Answer: ok."]},
                    tarsy={"agent_chains": {"kubernetes": chain}})


def _receive_while_the_fingerprint_is_locked(timeout: float) -> bool:
    """Whether a post of fingerprint fp-1 finishes while another transaction holds that fingerprint's lock."""
    done = threading.Event()

    def post():
        from django.db import connection

        try:
            session_receive(data={"alertname": "Crash"}, alert_type="kubernetes", fingerprint="fp-1")
            done.set()
        finally:
            connection.close()

    with psycopg.connect(processes.test_database_url()) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s, %s)",
                       [occurrences._FINGERPRINT_LOCK, occurrences._lock_key("kubernetes\nfp-1")])
        thread = threading.Thread(target=post)
        thread.start()
        finished = done.wait(timeout)
        holder.rollback()  # releases the lock: a waiting post goes on
    thread.join(30)
    return finished


def test_without_dedup_a_post_does_not_wait_for_another_post_of_the_same_alert(scripted_config):
    _config(scripted_config, dedup=False)
    assert _receive_while_the_fingerprint_is_locked(timeout=10)
    assert AlertSession.objects.filter(fingerprint="fp-1").count() == 1


def test_with_dedup_a_post_waits_for_another_post_of_the_same_alert(scripted_config):
    _config(scripted_config, dedup=True)
    assert not _receive_while_the_fingerprint_is_locked(timeout=1.5)
    assert AlertSession.objects.filter(fingerprint="fp-1").count() == 1  # went on once the lock was released
