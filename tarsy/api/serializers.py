"""Request validation and response shapes. Serializers shape; services decide."""

from __future__ import annotations

from rest_framework import serializers

from tarsy.models import AgentExecution, AlertSession, Stage


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


class AlertSubmitSerializer(serializers.Serializer):
    alert_type = serializers.CharField(required=False, allow_blank=True, max_length=200)
    data = serializers.JSONField(help_text="Alert payload: any JSON value or text; stored as text")
    runbook = serializers.CharField(required=False, allow_blank=True, max_length=2048)
    mcp = MCPSelectionSerializer(required=False, allow_null=True)


class AlertAcceptedSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    status = serializers.CharField()


class TokenFields(serializers.Serializer):
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    thinking_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()


class ExecutionSerializer(serializers.ModelSerializer):
    class Meta:
        model = AgentExecution
        fields = ["id", "agent_name", "agent_index", "iteration_strategy", "llm_provider", "llm_backend", "status",
                  "error_message", "current_iteration", "iterations_completed", "max_iterations", "input_tokens",
                  "output_tokens", "thinking_tokens", "total_tokens", "started_at", "completed_at"]


class StageSerializer(serializers.ModelSerializer):
    executions = ExecutionSerializer(many=True, read_only=True)
    input_tokens = serializers.SerializerMethodField()
    output_tokens = serializers.SerializerMethodField()
    total_tokens = serializers.SerializerMethodField()

    class Meta:
        model = Stage
        fields = ["id", "name", "index", "kind", "parallel_type", "success_policy", "expected_agent_count", "status",
                  "error_message", "started_at", "completed_at", "executions", "input_tokens", "output_tokens",
                  "total_tokens"]

    def _sum(self, stage: Stage, field: str) -> int:
        return sum(getattr(e, field) for e in stage.executions.all())

    def get_input_tokens(self, stage: Stage) -> int:
        return self._sum(stage, "input_tokens")

    def get_output_tokens(self, stage: Stage) -> int:
        return self._sum(stage, "output_tokens")

    def get_total_tokens(self, stage: Stage) -> int:
        return self._sum(stage, "total_tokens")


class SessionSerializer(serializers.ModelSerializer):
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = AlertSession
        fields = ["id", "alert_type", "chain_id", "status", "author", "runbook_url", "final_analysis",
                  "executive_summary", "executive_summary_error", "error_message", "current_stage_index",
                  "created_at", "started_at", "completed_at", "last_interaction_at", "duration_seconds",
                  "input_tokens", "output_tokens", "thinking_tokens", "total_tokens"]


class SessionDetailSerializer(SessionSerializer):
    alert_data = serializers.CharField()
    mcp_selection = serializers.JSONField(allow_null=True)
    stages = StageSerializer(many=True, read_only=True)
    chat_available = serializers.SerializerMethodField()

    class Meta(SessionSerializer.Meta):
        fields = SessionSerializer.Meta.fields + ["alert_data", "mcp_selection", "stages", "chat_available"]

    def get_chat_available(self, session: AlertSession) -> bool:
        from tarsy.pipeline.chat import chat_available

        return chat_available(session)
