"""Alerts: the submission body with its MCP selection, intake's answer, the alert types, and the alerts that joined
a session (repeats and related alerts)."""

from __future__ import annotations

from rest_framework import serializers

from .common import StoredAlertField


class MCPServerSelectionSerializer(serializers.Serializer):
    name = serializers.CharField()
    tools = serializers.ListField(child=serializers.CharField(), required=False)


class NativeToolsSerializer(serializers.Serializer):
    google_search = serializers.BooleanField(required=False)
    code_execution = serializers.BooleanField(required=False)
    url_context = serializers.BooleanField(required=False)


class MCPSelectionSerializer(serializers.Serializer):
    servers = MCPServerSelectionSerializer(many=True, required=False)
    native_tools = NativeToolsSerializer(required=False)

    def validate_servers(self, servers: list[dict]) -> list[dict]:
        from agents.mcp.selection import merge_repeated_servers

        return merge_repeated_servers(servers)


class AlertSubmitSerializer(serializers.Serializer):
    alert_type = serializers.CharField(required=False, allow_blank=True, max_length=200)
    # DRF's metaclass takes declared fields off the class; the stubs read `data` as Serializer.data.
    data = serializers.JSONField(  # type: ignore[assignment]
        help_text="Alert payload: any JSON value or text; stored as text")
    runbook = serializers.CharField(required=False, allow_blank=True, max_length=2048)
    mcp = MCPSelectionSerializer(required=False, allow_null=True)
    fingerprint = serializers.CharField(required=False, allow_blank=True, max_length=128,
                                        help_text="The sender's identity of the alert; repeats join one session")
    severity = serializers.CharField(required=False, allow_blank=True, max_length=16,
                                     help_text="critical, high, warning or info; orders the queue")
    group_key = serializers.CharField(required=False, allow_blank=True, max_length=200,
                                      help_text="Alerts sharing it join the group's first investigation")


class AlertAcceptedSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    session_url = serializers.URLField()
    status = serializers.CharField(help_text="queued: a new session; attached: the alert joined an existing one; "
                                             "silenced: a new session kept without investigation (a silence)")
    deduplicated = serializers.BooleanField(help_text="A repeat of the session's alert (same fingerprint)")
    related = serializers.BooleanField(help_text="Another alert of the group the session investigates")
    occurrence_count = serializers.IntegerField()


class AlertTypeSerializer(serializers.Serializer):
    alert_type = serializers.CharField()
    chain_id = serializers.CharField()
    description = serializers.CharField(allow_blank=True)


class AlertTypesSerializer(serializers.Serializer):
    default_alert_type = serializers.CharField()
    alert_types = AlertTypeSerializer(many=True)


class AlertOccurrenceSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    alert_type = serializers.CharField()
    fingerprint = serializers.CharField()
    severity = serializers.CharField()
    author = serializers.CharField()
    received_at = serializers.DateTimeField()
    alert_data = StoredAlertField()
