"""A session's timeline: its events in order and where the socket stream continues."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from agents.timeline_events import read_metadata


class TimelineEventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    stage_id = serializers.IntegerField(allow_null=True)
    execution_id = serializers.UUIDField(allow_null=True)
    iteration = serializers.IntegerField()
    sequence_number = serializers.IntegerField()
    event_type = serializers.CharField()
    status = serializers.CharField()
    content = serializers.CharField(allow_blank=True)
    metadata = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_metadata(self, event) -> dict[str, Any]:
        """In the event type's shape; rows stored before the key names were fixed read the same."""
        return read_metadata(event.event_type, event.metadata).dump()


class TimelineSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    last_event_id = serializers.IntegerField(help_text="Continue the socket stream after this event id")
    events = TimelineEventSerializer(many=True)
