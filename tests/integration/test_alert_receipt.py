"""Intake's entry point: identity fields are stored, a bad severity is refused, the status signal fires."""

from __future__ import annotations

import pytest

from tarsy.errors import ValidationFailed
from tarsy.models import AlertSession
from tarsy.services.intake.alerts import session_receive
from tarsy.signals import session_status_changed

pytestmark = [pytest.mark.django_db]


def test_receive_stores_fingerprint_and_severity():
    receipt = session_receive(data={"pod": "web-1"}, fingerprint="fp-1", severity="critical")
    stored = AlertSession.objects.get(id=receipt.session.id)
    assert (stored.fingerprint, stored.severity, receipt.deduplicated) == ("fp-1", "critical", False)


def test_severity_defaults_to_warning():
    receipt = session_receive(data={"pod": "web-1"})
    assert AlertSession.objects.get(id=receipt.session.id).severity == "warning"


def test_unknown_severity_is_refused_and_nothing_stored():
    with pytest.raises(ValidationFailed) as exc:
        session_receive(data={"pod": "web-1"}, severity="sev1")
    assert "severity" in exc.value.detail
    assert not AlertSession.objects.exists()


def test_status_signal_carries_the_stored_session():
    seen = []

    def receiver(sender, session, **kwargs):
        seen.append((session.id, session.status))

    session_status_changed.connect(receiver)
    try:
        receipt = session_receive(data={"pod": "web-1"})
    finally:
        session_status_changed.disconnect(receiver)
    assert seen == [(receipt.session.id, "pending")]
