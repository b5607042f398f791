"""Signed PagerDuty deliveries are acted on once and only while fresh.

A signature proves who sent a body, not when: a captured signed `incident.resolved` from 2019 would otherwise
cancel a session created today. So a signed event must have occurred within `max_event_age` (either side of
now, for clock skew), and its event id is remembered for twice that long in the cache shared by every web
process (Redis in production): a second delivery of the id is acknowledged and not acted on.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.core.cache import cache
from django.utils import timezone


def event_age_problem(occurred_at: str, max_age_s: float) -> str | None:
    """Why an event's `occurred_at` (ISO 8601) is not acceptable now, or None."""
    try:
        moment = datetime.fromisoformat(occurred_at.replace("Z", "+00:00"))
    except ValueError:
        return f"occurred_at {occurred_at[:40]!r} is not an ISO 8601 time"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    age = (timezone.now() - moment).total_seconds()
    if abs(age) > max_age_s:
        return f"the event occurred at {occurred_at}, outside the accepted window of {max_age_s:g} s around now"
    return None


def _key(source: str, event_id: str) -> str:
    return f"intake-event:{source}:{event_id}"


def event_claim(*, source: str, event_id: str, max_age_s: float) -> bool:
    """True for the first delivery of this event id (atomic: `cache.add`), False for a repeat."""
    return cache.add(_key(source, event_id), 1, timeout=max(2 * max_age_s, 1))


def event_release(*, source: str, event_id: str) -> None:
    """Forget a claimed id whose delivery failed, so the sender's retry is acted on."""
    cache.delete(_key(source, event_id))
