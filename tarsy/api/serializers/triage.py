"""Shapes of a session's triage state, its activity log and the triage actions."""

from __future__ import annotations

from rest_framework import serializers

from tarsy.models import (
    TRIAGE_ACTIONS,
    TRIAGE_BULK_ACTIONS,
    TRIAGE_MAX_BULK,
    TRIAGE_MAX_NOTE_CHARS,
    AlertSession,
    Resolution,
    TriageActivity,
    TriageStatus,
)


class TriageActivitySerializer(serializers.ModelSerializer):
    class Meta:
        model = TriageActivity
        fields = ["actor", "action", "from_status", "to_status", "assignee", "resolution", "note", "created_at"]


class TriageSerializer(serializers.ModelSerializer):
    session_id = serializers.UUIDField(source="id", read_only=True)
    triage_status = serializers.ChoiceField(choices=TriageStatus.choices, allow_blank=True, read_only=True,
                                            help_text="Empty while the session has not finished")
    activity = TriageActivitySerializer(source="triage_activity", many=True, read_only=True,
                                        help_text="Every transition, oldest first")

    class Meta:
        model = AlertSession
        fields = ["session_id", "triage_status", "assignee", "resolution", "resolution_note", "activity"]


class TriageInSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=TRIAGE_ACTIONS)
    assignee = serializers.CharField(required=False, allow_blank=True, max_length=255,
                                     help_text="For assign: an active user (any identity in proxy mode)")
    resolution = serializers.ChoiceField(choices=Resolution.choices, required=False, allow_blank=True,
                                         help_text="Required for resolve")
    note = serializers.CharField(required=False, allow_blank=True, max_length=TRIAGE_MAX_NOTE_CHARS)


class TriageBulkInSerializer(serializers.Serializer):
    session_ids = serializers.ListField(child=serializers.UUIDField(), min_length=1, max_length=TRIAGE_MAX_BULK)
    action = serializers.ChoiceField(choices=TRIAGE_BULK_ACTIONS)
    resolution = serializers.ChoiceField(choices=Resolution.choices, required=False, allow_blank=True,
                                         help_text="Required for resolve")
    note = serializers.CharField(required=False, allow_blank=True, max_length=TRIAGE_MAX_NOTE_CHARS)


class TriageBulkResultSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    ok = serializers.BooleanField()
    triage_status = serializers.CharField(allow_null=True)
    error = serializers.CharField(allow_null=True, help_text="Why this session was not changed")


class TriageBulkSerializer(serializers.Serializer):
    results = TriageBulkResultSerializer(many=True)
