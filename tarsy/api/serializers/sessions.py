"""Sessions: a history row, the active panel, the detail with its stages and executions, the summary, the filter
options. The detail shapes what `selectors.sessions.session_detail` read; nothing here queries."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.quotes import quote
from tarsy.models import AgentExecution, AlertSession, Stage
from tarsy.selectors.quality import related_or_none

from .alerts import AlertOccurrenceSerializer
from .common import (
    COST_FIELDS,
    COST_HELP,
    TOKEN_FIELDS,
    BudgetReachedSerializer,
    CostMixin,
    SessionURLField,
    StoredAlertField,
    TokensSerializer,
    shown_cost,
)
from .quality import ReviewBriefSerializer, ReviewSerializer, ScoreBriefSerializer, ScoreSerializer

PREVIEW_CHARS = 240  # executive summary preview in list rows: one or two lines of a table cell

# Identity, urgency and what joined the session: repeats (occurrence_count counts the first alert too) and the
# related alerts of the group it leads.
STORM_FIELDS = ("severity", "fingerprint", "occurrence_count", "last_seen_at", "group_key", "related_count")


class ExecutionSerializer(CostMixin, serializers.ModelSerializer):
    class Meta:
        model = AgentExecution
        fields = ["id", "agent_name", "agent_index", "iteration_strategy", "llm_provider", "llm_backend", "status",
                  "error_message", "current_iteration", "iterations_completed", "max_iterations", "started_at",
                  "completed_at", "parent_execution_id", "task", *TOKEN_FIELDS, *COST_FIELDS]


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
        fields = ["id", "name", "index", "kind", "type", "chain_stage_index", "parallel_type", "success_policy",
                  "expected_agent_count", "status", "error_message", "final_analysis", "chat_message_id",
                  "started_at", "completed_at", "executions", *TOKEN_FIELDS, *COST_FIELDS]

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


# A session's token and cost totals and the time of its last call, read from its counters row (joined by the
# selectors: `select_related("counters")`). A comment, not a docstring: the API schema would show it.
class SessionCountersMixin(serializers.Serializer):
    input_tokens = serializers.ReadOnlyField(source="counters.input_tokens")
    output_tokens = serializers.ReadOnlyField(source="counters.output_tokens")
    thinking_tokens = serializers.ReadOnlyField(source="counters.thinking_tokens")
    total_tokens = serializers.ReadOnlyField(source="counters.total_tokens")
    cached_tokens = serializers.ReadOnlyField(source="counters.cached_tokens")
    cost_usd = serializers.SerializerMethodField(help_text=COST_HELP)
    unpriced_calls = serializers.ReadOnlyField(source="counters.unpriced_calls")
    last_interaction_at = serializers.ReadOnlyField(source="counters.last_interaction_at")

    def get_cost_usd(self, session: AlertSession) -> str | None:
        counters = related_or_none(session, "counters")
        return shown_cost(counters.cost_usd, counters.unpriced_calls) if counters else None


# The silence an alert arrived under (its id; GET /api/v1/silences/<id>), and a proactive check's run.
QUIET_FIELDS = ["silenced_by", "check_name", "check_result"]


class SessionSerializer(SessionCountersMixin, serializers.ModelSerializer):
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
                  "budget_reached", "citations", *TOKEN_FIELDS, *COST_FIELDS, *STORM_FIELDS, "score",
                  "review", "triage_status", "assignee", *QUIET_FIELDS]

    @extend_schema_field(ScoreSerializer(allow_null=True))
    def get_score(self, session: AlertSession) -> dict | None:
        score = related_or_none(session, "score")
        return ScoreSerializer(score).data if score else None

    @extend_schema_field(ReviewSerializer(allow_null=True))
    def get_review(self, session: AlertSession) -> dict | None:
        review = related_or_none(session, "review")
        return ReviewSerializer(review).data if review else None


class SessionListItemSerializer(SessionCountersMixin, serializers.ModelSerializer):
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
                  *TOKEN_FIELDS, *COST_FIELDS, *STORM_FIELDS, "score", "review", "triage_status", "assignee",
                  *QUIET_FIELDS]

    @extend_schema_field(ScoreBriefSerializer(allow_null=True))
    def get_score(self, session: AlertSession) -> dict | None:
        score = related_or_none(session, "score")
        return ScoreBriefSerializer(score).data if score else None

    @extend_schema_field(ReviewBriefSerializer(allow_null=True))
    def get_review(self, session: AlertSession) -> dict | None:
        review = related_or_none(session, "review")
        return ReviewBriefSerializer(review).data if review else None

    def get_executive_summary_preview(self, session: AlertSession) -> str:
        return quote(session.executive_summary or "", PREVIEW_CHARS - 1)


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


# Shapes `selectors.sessions.session_detail`; `chat_available` (the chat service's rule) and `last_event_id` (the
# socket stream's cursor) come in the context.
class SessionDetailSerializer(SessionSerializer):
    alert_data = StoredAlertField()
    mcp_selection = serializers.JSONField(allow_null=True)
    stages = StageSerializer(many=True, read_only=True)
    chat_available = serializers.SerializerMethodField()
    queue_position = serializers.SerializerMethodField()
    last_event_id = serializers.SerializerMethodField()
    related_alerts = AlertOccurrenceSerializer(many=True, read_only=True)  # the group it leads, oldest first
    # The latest repeats, newest first (occurrence_count says how many there were in all).
    recent_occurrences = AlertOccurrenceSerializer(many=True, read_only=True)

    class Meta(SessionSerializer.Meta):
        fields = [*SessionSerializer.Meta.fields, "alert_data", "mcp_selection", "stages", "chat_available",
                  "queue_position", "last_event_id", "related_alerts", "recent_occurrences"]

    def get_chat_available(self, session: AlertSession) -> bool:
        return self.context["chat_available"]

    def get_queue_position(self, session: AlertSession) -> int | None:
        return getattr(session, "queue_position", None)

    def get_last_event_id(self, session: AlertSession) -> int:
        """Where a socket client continues (`catchup`) after loading this page over REST."""
        return self.context.get("last_event_id", 0)


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
    # DRF's metaclass takes declared fields off the class; the stubs read `errors` as Serializer.errors.
    errors = serializers.IntegerField()  # type: ignore[assignment]
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
