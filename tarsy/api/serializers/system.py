"""The system page: configuration warnings and the MCP servers' status."""

from __future__ import annotations

from rest_framework import serializers


class WarningSerializer(serializers.Serializer):
    category = serializers.CharField()
    message = serializers.CharField()


class WarningsSerializer(serializers.Serializer):
    warnings = WarningSerializer(many=True)


class MCPToolSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True, allow_null=True)


class MCPServerStatusSerializer(serializers.Serializer):
    name = serializers.CharField()
    transport = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=["ok", "error", "unused"],
                                     help_text="unused: no chain uses it, so it is neither started nor checked")
    error = serializers.CharField(allow_blank=True, help_text="Why it is down (what the server said), or unused")
    tool_count = serializers.IntegerField()
    tools = MCPToolSerializer(many=True)


class MCPServersSerializer(serializers.Serializer):
    servers = MCPServerStatusSerializer(many=True)
