"""Intake serialises posts only for the look-ups it makes: a chain with dedup waits for another post of the
same alert; a chain without dedup never looks an alert up by fingerprint and does not wait."""

from __future__ import annotations

import threading

import psycopg
import pytest

from tarsy.models import AlertSession, Event
from tarsy.services import occurrences
from tarsy.services.intake.alerts import session_receive
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


def _visible_to_another_connection_when_signalled(fingerprint: str) -> bool:
    """Whether another connection already sees the new session when its status signal is sent (the INSERT
    has committed), or not yet (a transaction still holds it)."""
    from tarsy.signals import session_status_changed

    seen = []

    def receiver(sender, session, **kwargs):
        with psycopg.connect(processes.test_database_url()) as other:
            seen.append(other.execute("SELECT count(*) FROM tarsy_alertsession WHERE id = %s",
                                      [session.id]).fetchone()[0] == 1)

    session_status_changed.connect(receiver, dispatch_uid="test-visibility")
    try:
        session_receive(data={"alertname": "Crash"}, alert_type="kubernetes", fingerprint=fingerprint)
    finally:
        session_status_changed.disconnect(dispatch_uid="test-visibility")
    assert len(seen) == 1
    return seen[0]


def test_without_look_ups_a_new_session_commits_with_its_status_events(scripted_config):
    _config(scripted_config, dedup=False)
    assert not _visible_to_another_connection_when_signalled("fp-2")
    session = AlertSession.objects.get(fingerprint="fp-2")
    assert session.status == "pending"
    assert Event.objects.filter(session_id=session.id, type="session.status").count() == 2  # its and the list's


def test_with_dedup_the_look_up_and_the_new_session_commit_together(scripted_config):
    _config(scripted_config, dedup=True)
    assert not _visible_to_another_connection_when_signalled("fp-3")
    assert AlertSession.objects.filter(fingerprint="fp-3").count() == 1
