"""Reads of a session's triage state with its activity log."""

from __future__ import annotations

from typing import Any

from tarsy.models import AlertSession


def session_triage(*, session_id: Any) -> AlertSession | None:
    """The session with `triage_activity` prefetched (oldest first); None when there is none."""
    return AlertSession.objects.prefetch_related("triage_activity").filter(id=session_id).first()
