"""A channel's catch-up cursor: the id of its latest stored event.

A page or a REST answer reads it before the rows it shows, so a client that subscribes from it misses nothing
published in between; the socket's overflow answer reads it to say where a reload continues.
"""

from __future__ import annotations

from django.db.models import Max

from tarsy.models import Event


def event_cursor(channel: str) -> int:
    return Event.objects.filter(channel=channel).aggregate(m=Max("id"))["m"] or 0
