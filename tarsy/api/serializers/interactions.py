"""A session's debug records: its LLM conversations and MCP calls."""

from __future__ import annotations

from rest_framework import serializers


class LLMInteractionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    stage_id = serializers.IntegerField(allow_null=True, source="execution.stage_id", default=None)
    execution_id = serializers.UUIDField(allow_null=True)
    iteration = serializers.IntegerField()
    interaction_type = serializers.CharField()
    provider = serializers.CharField(allow_blank=True)
    model = serializers.CharField(allow_blank=True)
    conversation = serializers.JSONField()
    thinking_content = serializers.CharField(allow_blank=True)
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    thinking_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=20, decimal_places=10, allow_null=True,
                                        help_text="Estimated USD; null: the model has no price")
    duration_ms = serializers.IntegerField()
    success = serializers.BooleanField()
    error_message = serializers.CharField(allow_blank=True)
    superseded = serializers.BooleanField(
        help_text="Made by an interrupted attempt that ran again: kept, counted in spend, not in the analysis")
    status = serializers.ChoiceField(
        choices=["started", "completed", "interrupted"],
        help_text="started: the call is in flight (its row is written when it starts); interrupted: its process "
                  "stopped before it ended")
    created_at = serializers.DateTimeField()


class MCPInteractionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    stage_id = serializers.IntegerField(allow_null=True, source="execution.stage_id", default=None)
    execution_id = serializers.UUIDField(allow_null=True)
    iteration = serializers.IntegerField()
    server = serializers.CharField()
    tool = serializers.CharField()
    arguments = serializers.JSONField()
    result = serializers.CharField(allow_blank=True)
    raw_size = serializers.IntegerField()
    summarized = serializers.BooleanField()
    available_tools = serializers.JSONField()
    duration_ms = serializers.IntegerField()
    success = serializers.BooleanField()
    error_message = serializers.CharField(allow_blank=True)
    superseded = serializers.BooleanField(
        help_text="Made by an interrupted attempt that ran again: kept, counted in spend, not in the analysis")
    created_at = serializers.DateTimeField()


class InteractionsSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    llm_interactions = LLMInteractionSerializer(many=True)
    mcp_interactions = MCPInteractionSerializer(many=True)
