"""Finished sessions for triage tests, made through the services (submit, then the status change that finishes)."""

from __future__ import annotations

import pytest
from django.db.models import F

from tarsy.models import AlertSession
from tarsy.services import sessions as session_service
from tarsy.services.intake.alerts import session_submit


@pytest.fixture
def finished():
    """Factory: a session of `chain_id`'s alert type with `severity`, run and finished with `status`."""

    def make(*, severity="info", alert_type="kubernetes", status="completed", pod="web-1") -> AlertSession:
        session = session_submit(data=f"pod {pod} CrashLoopBackOff", alert_type=alert_type,
                                 author="alertmanager")
        AlertSession.all_objects.filter(id=session.id).update(severity=severity, status="in_progress",
                                                              started_at=F("created_at"))
        return session_service.session_set_status(session_id=session.id, status=status,
                                                  from_statuses=("in_progress",))

    return make
