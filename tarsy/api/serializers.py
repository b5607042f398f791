"""Request validation and response shapes. Serializers shape; services decide."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.timeline_events import read_metadata
from tarsy.links import session_url
from tarsy.models import AgentExecution, AlertSession, Stage
from tarsy.selectors.quality import related_or_none

from .quality_serializers import (
    ReviewBriefSerializer,
    ReviewSerializer,
    ScoreBriefSerializer,
    ScoreSerializer,
)

PREVIEW_CHARS = 240  # executive summary preview in list rows: one or two lines of a table cell


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField()
    detail = serializers.JSONField(allow_null=True)


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


class SharedFieldsSerializer(serializers.Serializer):
    """A request body whose bound fields are built once per class, not per request: DRF deep-copies every declared
    field for each instance, most of what validating an alert cost. Sound only for fields that validation reads
    and never writes, with no per-request state: their root is a data-less prototype (no context, never partial)."""

    @property
    def fields(self):
        cls = type(self)
        shared = cls.__dict__.get("_shared_fields")
        if shared is None:  # two threads may both build it: the same fields, one kept
            shared = super(SharedFieldsSerializer, cls()).fields
            cls._shared_fields = shared
        return shared


class AlertSubmitSerializer(SharedFieldsSerializer):
    alert_type = serializers.CharField(required=False, allow_blank=True, max_length=200)
    data = serializers.JSONField(help_text="Alert payload: any JSON value or text; stored as text")
    runbook = serializers.CharField(required=False, allow_blank=True, max_length=2048)
    mcp = MCPSelectionSerializer(required=False, allow_null=True)
    fingerprint = serializers.CharField(required=False, allow_blank=True, max_length=128,
                                        help_text="The sender's identity of the alert; repeats join one session")
    severity = serializers.CharField(required=False, allow_blank=True, max_length=16,
                                     help_text="critical, high, warning or info; orders the queue")
    group_key = serializers.CharField(required=False, allow_blank=True, max_length=200,
                                      help_text="Alerts sharing it join the group's first investigation")


@extend_schema_field(OpenApiTypes.ANY)
class StoredAlertField(serializers.Field):
    """Alert data as it was posted: an object or array comes back as JSON (it is stored as indented JSON text),
    text as the string."""

    def __init__(self, **kwargs):
        super().__init__(read_only=True, **kwargs)

    def to_representation(self, text: str) -> Any:
        if text.lstrip()[:1] in ("{", "["):
            try:
                return json.loads(text)
            except ValueError:
                pass
        return text


@extend_schema_field(OpenApiTypes.URI)
class SessionURLField(serializers.Field):
    """The session's dashboard page as an absolute URL, for links from Slack, PagerDuty or a ticket: built from
    `system.external_url`, else from the request's host."""

    def __init__(self, **kwargs):
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, session: AlertSession) -> str:
        return session_url(session.id, self.context.get("request"))


class AlertAcceptedSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    session_url = serializers.URLField()
    status = serializers.CharField(help_text="queued: a new session; attached: the alert joined an existing one")
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


_TOKEN_FIELDS = ("input_tokens", "output_tokens", "thinking_tokens", "total_tokens", "cached_tokens")
_COST_FIELDS = ("cost_usd", "unpriced_calls")
COST_HELP = ("Estimated USD (a decimal string) of the priced LLM calls; null when calls were made but none "
             "could be priced. With unpriced_calls > 0 it is a floor")


def shown_cost(cost: Decimal, unpriced_calls: int) -> str | None:
    """A total as the API shows it: unknown (null), never 0, when nothing of it could be priced."""
    return None if unpriced_calls and not cost else format(Decimal(cost), "f")  # "0.0000000000", never "0E-10"


class CostMixin(serializers.Serializer):
    cost_usd = serializers.SerializerMethodField(help_text=COST_HELP)

    def get_cost_usd(self, row) -> str | None:
        return shown_cost(row.cost_usd, row.unpriced_calls)


class ExecutionSerializer(CostMixin, serializers.ModelSerializer):
    class Meta:
        model = AgentExecution
        fields = ["id", "agent_name", "agent_index", "iteration_strategy", "llm_provider", "llm_backend", "status",
                  "error_message", "current_iteration", "iterations_completed", "max_iterations", "started_at",
                  "completed_at", *_TOKEN_FIELDS, *_COST_FIELDS]


# Identity, urgency and what joined the session: repeats (occurrence_count counts the first alert too) and the
# related alerts of the group it leads.
_STORM_FIELDS = ("severity", "fingerprint", "occurrence_count", "last_seen_at", "group_key", "related_count")


class StageSerializer(serializers.ModelSerializer):
    """Token and cost totals of a stage are the sums of its executions' (computed from the prefetched rows)."""

    executions = ExecutionSerializer(many=True, read_only=True)
    input_tokens = serializers.SerializerMethodField()
    output_tokens = serializers.SerializerMethodField()
    thinking_tokens = serializers.SerializerMethodField()
    total_tokens = serializers.SerializerMethodField()
    cached_tokens = serializers.SerializerMethodField()
    cost_usd = serializers.SerializerMethodField(help_text=COST_HELP)
    unpriced_calls = serializers.SerializerMethodField()

    class Meta:
        model = Stage
        fields = ["id", "name", "index", "kind", "chain_stage_index", "parallel_type", "success_policy",
                  "expected_agent_count", "status", "error_message", "final_analysis", "chat_message_id",
                  "started_at", "completed_at", "executions", *_TOKEN_FIELDS, *_COST_FIELDS]

    def _sum(self, stage: Stage, field: str) -> Any:
        return sum((getattr(e, field) for e in stage.executions.all()), Decimal(0) if field == "cost_usd" else 0)

    def get_cached_tokens(self, stage: Stage) -> int:
        return self._sum(stage, "cached_tokens")

    def get_cost_usd(self, stage: Stage) -> str | None:
        return shown_cost(self._sum(stage, "cost_usd"), self._sum(stage, "unpriced_calls"))

    def get_unpriced_calls(self, stage: Stage) -> int:
        return self._sum(stage, "unpriced_calls")

    def get_input_tokens(self, stage: Stage) -> int:
        return self._sum(stage, "input_tokens")

    def get_output_tokens(self, stage: Stage) -> int:
        return self._sum(stage, "output_tokens")

    def get_thinking_tokens(self, stage: Stage) -> int:
        return self._sum(stage, "thinking_tokens")

    def get_total_tokens(self, stage: Stage) -> int:
        return self._sum(stage, "total_tokens")


class CitationsSerializer(serializers.Serializer):
    """The final analysis's citations as verified when it was written (agents.citations).

    `valid`: cited ids that are tool results of this session (`E<n>`, with the timeline `event_id` holding
    them) or fields of its alert (`A:<path>`); `invalid`: cited ids that are neither, with a `reason`;
    `uncited`: the session's tool results the analysis never cites; `uncited_findings`: paragraphs and list items
    of the analysis (outside its recommendations) that make a claim and cite nothing."""

    valid = serializers.ListField(child=serializers.DictField())
    invalid = serializers.ListField(child=serializers.DictField())
    uncited = serializers.ListField(child=serializers.DictField())
    uncited_findings = serializers.ListField(child=serializers.DictField(), default=list)
    cited_count = serializers.IntegerField()
    evidence_count = serializers.IntegerField()
    verified_at = serializers.DateTimeField()


class BudgetReachedSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["tokens", "cost_usd", "tool_calls", "wall_time"])
    limit = serializers.FloatField()
    used = serializers.FloatField()
    message = serializers.CharField()


class SessionSerializer(CostMixin, serializers.ModelSerializer):
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)
    session_url = SessionURLField()
    score = serializers.SerializerMethodField()
    review = serializers.SerializerMethodField()
    citations = CitationsSerializer(read_only=True, allow_null=True)
    budget_reached = BudgetReachedSerializer(allow_null=True, read_only=True,
                                             help_text="Set when the budget forced the investigation to conclude")

    class Meta:
        model = AlertSession
        fields = ["id", "session_url", "title", "alert_type", "chain_id", "status", "author", "runbook_url",
                  "final_analysis",
                  "executive_summary", "executive_summary_error", "error_message", "current_stage_index",
                  "created_at", "started_at", "completed_at", "last_interaction_at", "duration_seconds",
                  "budget_reached", "citations", *_TOKEN_FIELDS, *_COST_FIELDS, *_STORM_FIELDS, "score",
                  "review"]

    @extend_schema_field(ScoreSerializer(allow_null=True))
    def get_score(self, session: AlertSession) -> dict | None:
        score = related_or_none(session, "score")
        return ScoreSerializer(score).data if score else None

    @extend_schema_field(ReviewSerializer(allow_null=True))
    def get_review(self, session: AlertSession) -> dict | None:
        review = related_or_none(session, "review")
        return ReviewSerializer(review).data if review else None


class SessionListItemSerializer(CostMixin, serializers.ModelSerializer):
    """A history row: no alert data or full analysis (they can be megabytes), a summary preview instead."""

    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)
    session_url = SessionURLField()
    executive_summary_preview = serializers.SerializerMethodField()
    score = serializers.SerializerMethodField()
    review = serializers.SerializerMethodField()
    budget_reached = BudgetReachedSerializer(allow_null=True, read_only=True)

    class Meta:
        model = AlertSession
        fields = ["id", "session_url", "title", "alert_type", "chain_id", "status", "author", "error_message",
                  "created_at",
                  "started_at", "completed_at", "duration_seconds", "executive_summary_preview", "budget_reached",
                  *_TOKEN_FIELDS, *_COST_FIELDS, *_STORM_FIELDS, "score", "review"]

    @extend_schema_field(ScoreBriefSerializer(allow_null=True))
    def get_score(self, session: AlertSession) -> dict | None:
        score = related_or_none(session, "score")
        return ScoreBriefSerializer(score).data if score else None

    @extend_schema_field(ReviewBriefSerializer(allow_null=True))
    def get_review(self, session: AlertSession) -> dict | None:
        review = related_or_none(session, "review")
        return ReviewBriefSerializer(review).data if review else None

    def get_executive_summary_preview(self, session: AlertSession) -> str:
        text = (session.executive_summary or "").strip()
        return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1].rstrip() + "…"


class ActiveSessionSerializer(SessionListItemSerializer):
    queue_position = serializers.SerializerMethodField()

    class Meta(SessionListItemSerializer.Meta):
        fields = [*SessionListItemSerializer.Meta.fields, "current_stage_index", "queue_position"]

    def get_queue_position(self, session: AlertSession) -> int | None:
        return getattr(session, "queue_position", None)


class ActiveSessionsSerializer(serializers.Serializer):
    active = ActiveSessionSerializer(many=True)
    queued = ActiveSessionSerializer(many=True)


class FilterOptionsSerializer(serializers.Serializer):
    statuses = serializers.ListField(child=serializers.CharField())
    alert_types = serializers.ListField(child=serializers.CharField())
    chain_ids = serializers.ListField(child=serializers.CharField())
    authors = serializers.ListField(child=serializers.CharField())
    ordering = serializers.ListField(child=serializers.CharField())
    supports = serializers.ListField(child=serializers.CharField())
    scoring_states = serializers.ListField(child=serializers.CharField())
    tags = serializers.ListField(child=serializers.CharField())
    review_states = serializers.ListField(child=serializers.CharField())
    ratings = serializers.ListField(child=serializers.CharField())


class AlertOccurrenceSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    alert_type = serializers.CharField()
    fingerprint = serializers.CharField()
    severity = serializers.CharField()
    author = serializers.CharField()
    received_at = serializers.DateTimeField()
    alert_data = StoredAlertField()


class SessionDetailSerializer(SessionSerializer):
    alert_data = StoredAlertField()
    mcp_selection = serializers.JSONField(allow_null=True)
    stages = StageSerializer(many=True, read_only=True)
    chat_available = serializers.SerializerMethodField()
    queue_position = serializers.SerializerMethodField()
    last_event_id = serializers.SerializerMethodField()
    related_alerts = serializers.SerializerMethodField()
    recent_occurrences = serializers.SerializerMethodField()

    class Meta(SessionSerializer.Meta):
        fields = [*SessionSerializer.Meta.fields, "alert_data", "mcp_selection", "stages", "chat_available",
                  "queue_position", "last_event_id", "related_alerts", "recent_occurrences"]

    @extend_schema_field(AlertOccurrenceSerializer(many=True))
    def get_related_alerts(self, session: AlertSession) -> list[dict]:
        """Every alert of the group this session leads, oldest first."""
        from tarsy.services.occurrences import occurrences_of

        rows = occurrences_of(session_id=session.id, kind="related")
        return AlertOccurrenceSerializer(rows, many=True).data

    @extend_schema_field(AlertOccurrenceSerializer(many=True))
    def get_recent_occurrences(self, session: AlertSession) -> list[dict]:
        """The latest repeats, newest first (occurrence_count says how many there were in all)."""
        from tarsy.services.occurrences import RECENT_OCCURRENCES, occurrences_of

        rows = occurrences_of(session_id=session.id, kind="occurrence", limit=RECENT_OCCURRENCES)
        return AlertOccurrenceSerializer(rows, many=True).data

    def get_chat_available(self, session: AlertSession) -> bool:
        from tarsy.services.chats import chat_available

        return chat_available(session)

    def get_queue_position(self, session: AlertSession) -> int | None:
        from tarsy.services.sessions import session_queue_position

        return session_queue_position(session)

    def get_last_event_id(self, session: AlertSession) -> int:
        """Where a socket client continues (`catchup`) after loading this page over REST."""
        return self.context.get("last_event_id", 0)


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


class TokensSerializer(serializers.Serializer):
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    thinking_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField()


class SessionSummarySerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    status = serializers.CharField()
    duration_seconds = serializers.FloatField(allow_null=True)
    stages = serializers.IntegerField()
    executions = serializers.IntegerField()
    llm_interactions = serializers.IntegerField()
    failed_llm_interactions = serializers.IntegerField()
    mcp_interactions = serializers.IntegerField()
    failed_mcp_interactions = serializers.IntegerField()
    timeline_events = serializers.IntegerField()
    errors = serializers.IntegerField()
    chat_messages = serializers.IntegerField()
    tokens = TokensSerializer()
    cost_usd = serializers.SerializerMethodField(help_text=COST_HELP)
    unpriced_calls = serializers.IntegerField()
    budget_reached = BudgetReachedSerializer(allow_null=True)

    def get_cost_usd(self, summary: dict[str, Any]) -> str | None:
        return shown_cost(summary["cost_usd"], summary["unpriced_calls"])


class SessionStatusSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    status = serializers.CharField()


class ChatMessageInSerializer(serializers.Serializer):
    content = serializers.CharField(max_length=None, allow_blank=False, trim_whitespace=True,
                                    help_text="The question, at most 100 000 characters")


class ChatAcceptedSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    message_id = serializers.UUIDField()
    stage_id = serializers.IntegerField()
    status = serializers.CharField()


class ChatMessageSerializer(serializers.Serializer):
    id = serializers.CharField()
    role = serializers.ChoiceField(choices=["user", "assistant"])
    content = serializers.CharField(allow_blank=True)
    author = serializers.CharField(allow_blank=True)
    status = serializers.CharField()
    stage_id = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)


class ChatMessagesSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    chat_available = serializers.BooleanField()
    reply_running = serializers.BooleanField()
    messages = ChatMessageSerializer(many=True)


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


class SpendGroupSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="The UTC day (YYYY-MM-DD) or the chain id")
    cost_usd = serializers.DecimalField(max_digits=24, decimal_places=10)
    calls = serializers.IntegerField()
    unpriced_calls = serializers.IntegerField()
    sessions = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    thinking_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField()


class DailyLimitSerializer(serializers.Serializer):
    limit_usd = serializers.DecimalField(max_digits=24, decimal_places=10, allow_null=True)
    spent_today_usd = serializers.DecimalField(max_digits=24, decimal_places=10)
    reached = serializers.BooleanField()


class SpendQuerySerializer(serializers.Serializer):
    group_by = serializers.ChoiceField(choices=["day", "chain"], default="day")
    since = serializers.DateField(required=False, help_text="First UTC day (default: 29 days before `until`)")
    until = serializers.DateField(required=False, help_text="Last UTC day (default: today)")

    MAX_DAYS = 366  # a year of days in one answer; longer ranges are asked in parts

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        import datetime

        until = attrs.get("until") or datetime.datetime.now(datetime.UTC).date()
        since = attrs.get("since") or until - datetime.timedelta(days=29)
        if since > until:
            raise serializers.ValidationError({"since": "must not be after until"})
        if (until - since).days >= self.MAX_DAYS:
            raise serializers.ValidationError({"since": f"a range covers at most {self.MAX_DAYS} days"})
        return {**attrs, "since": since, "until": until}


class SpendSerializer(serializers.Serializer):
    group_by = serializers.CharField()
    since = serializers.DateField()
    until = serializers.DateField()
    groups = SpendGroupSerializer(many=True)
    total_usd = serializers.DecimalField(max_digits=24, decimal_places=10)
    daily_limit = DailyLimitSerializer()
