"""Retention: old sessions are soft-deleted (hidden, not destroyed); old catch-up events are removed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tarsy.models import AlertSession, Event
from tarsy.pipeline.retention import retention_apply
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db]


def test_old_sessions_are_soft_deleted_and_old_events_removed(tmp_path):
    write_config(tmp_path, tarsy={"system": {"retention": {"session_retention_days": 30, "event_ttl": "1h"}}})
    old = AlertSession.objects.create(alert_data="x", alert_type="kubernetes", chain_id="kubernetes",
                                      status="completed")
    running_old = AlertSession.objects.create(alert_data="y", alert_type="kubernetes", chain_id="kubernetes",
                                              status="in_progress")
    recent = AlertSession.objects.create(alert_data="z", alert_type="kubernetes", chain_id="kubernetes",
                                         status="completed")
    long_ago = timezone.now() - timedelta(days=31)
    AlertSession.objects.filter(id__in=[old.id, running_old.id]).update(created_at=long_ago)
    stale_event = Event.objects.create(session=recent, channel=f"session:{recent.id}", type="session.status")
    fresh_event = Event.objects.create(session=recent, channel=f"session:{recent.id}", type="session.status")
    Event.objects.filter(id=stale_event.id).update(created_at=timezone.now() - timedelta(hours=2))

    assert retention_apply() == {"sessions_soft_deleted": 1, "events_deleted": 1}

    assert not AlertSession.objects.filter(id=old.id).exists()  # hidden by the default manager
    assert AlertSession.all_objects.get(id=old.id).deleted_at is not None  # but kept
    assert AlertSession.objects.filter(id=running_old.id).exists()  # never while it runs
    assert AlertSession.objects.filter(id=recent.id).exists()
    assert list(Event.objects.values_list("id", flat=True)) == [fresh_event.id]
