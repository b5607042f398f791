"""Django admin for on-call inspection: sessions → stages → executions → timeline and conversation.

Session records are read-only: the pipeline owns these rows; editing them by hand
would break its invariants.
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from tarsy.errors import ServiceError
from tarsy.selectors.conversations import llm_conversations
from tarsy.services import memories, silences

from .models import (
    AgentExecution,
    AlertSession,
    APIToken,
    Chat,
    ChatUserMessage,
    Event,
    LLMInteraction,
    MCPInteraction,
    Memory,
    Message,
    SessionCounters,
    SessionReview,
    SessionScore,
    Silence,
    Stage,
    TimelineEvent,
    TriageActivity,
)


def _link(obj, label: str | None = None):
    if obj is None:
        return "-"
    url = reverse(f"admin:tarsy_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, label or str(obj))


class ReadOnlyMixin:
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class ReadOnlyInline(ReadOnlyMixin, admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True


class StageInline(ReadOnlyInline):
    model = Stage
    fields = readonly_fields = ("index", "name", "kind", "status", "parallel_type", "success_policy", "started_at",
                                "completed_at")


class ExecutionInline(ReadOnlyInline):
    model = AgentExecution
    fk_name = "stage"
    fields = readonly_fields = ("agent_name", "iteration_strategy", "llm_provider", "status", "current_iteration",
                                "total_tokens", "error_message")


class TimelineInline(ReadOnlyInline):
    model = TimelineEvent
    fk_name = "execution"
    fields = readonly_fields = ("sequence_number", "iteration", "event_type", "status", "short_content")

    @admin.display(description="content")
    def short_content(self, obj):
        return (obj.content[:200] + "…") if len(obj.content) > 200 else obj.content


class MessageInline(ReadOnlyInline):
    model = Message
    fields = readonly_fields = ("sequence_number", "iteration", "role", "short_content", "tool_name", "tool_call_id")

    @admin.display(description="content")
    def short_content(self, obj):
        return (obj.content[:200] + "…") if len(obj.content) > 200 else obj.content


class DeletedFilter(admin.SimpleListFilter):
    title = "deleted"
    parameter_name = "deleted"

    def lookups(self, request, model_admin):
        return [("no", "Live"), ("yes", "Soft-deleted")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(deleted_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(deleted_at__isnull=True)
        return queryset


class CountersInline(ReadOnlyMixin, admin.StackedInline):
    model = SessionCounters
    can_delete = False


class ScoreInline(ReadOnlyMixin, admin.StackedInline):
    model = SessionScore
    can_delete = False
    fields = readonly_fields = ("status", "score", "support", "scorer_score", "tags", "rationale", "signals",
                                "provider", "model", "error", "requested_at", "scored_at")


class ReviewInline(ReadOnlyMixin, admin.StackedInline):
    model = SessionReview
    can_delete = False
    fields = readonly_fields = ("rating", "author", "feedback", "action_taken", "created_at", "updated_at")


class TriageActivityInline(ReadOnlyInline):
    model = TriageActivity
    can_delete = False
    fields = readonly_fields = ("created_at", "actor", "action", "from_status", "to_status", "assignee", "resolution",
                                "note")


@admin.register(AlertSession)
class AlertSessionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["short_id", "title", "alert_type", "chain_id", "status", "author", "created_at", "duration",
                    "total_tokens", "score_value", "review_rating", "summary_preview"]
    list_filter = ["status", "triage_status", "check_result", "alert_type", "chain_id",
                   ("created_at", admin.DateFieldListFilter),
                   DeletedFilter, ("score__support", admin.ChoicesFieldListFilter),
                   ("review__rating", admin.ChoicesFieldListFilter)]
    search_fields = ["id", "title", "alert_data", "final_analysis", "executive_summary", "author"]
    date_hierarchy = "created_at"
    inlines = [CountersInline, ScoreInline, ReviewInline, TriageActivityInline, StageInline]
    readonly_fields = [f.name for f in AlertSession._meta.fields]
    list_per_page = 50

    def get_queryset(self, request):
        return AlertSession.all_objects.select_related("counters", "score", "review")

    @admin.display(description="total tokens", ordering="counters__total_tokens")
    def total_tokens(self, obj):
        return obj.counters.total_tokens if hasattr(obj, "counters") else "-"

    @admin.display(description="score", ordering="score__score")
    def score_value(self, obj):
        if not hasattr(obj, "score"):  # a missing one-to-one raises an AttributeError
            return "-"
        score = obj.score
        return f"{score.score} ({score.support}) {', '.join(score.tags)}" if score.status == "scored" else score.status

    @admin.display(description="review", ordering="review__rating")
    def review_rating(self, obj):
        return f"{obj.review.rating} by {obj.review.author}" if hasattr(obj, "review") else "-"

    @admin.display(description="session", ordering="id")
    def short_id(self, obj):
        return str(obj.id)[:8]

    @admin.display(description="duration")
    def duration(self, obj):
        seconds = obj.duration_seconds
        return f"{seconds:.1f}s" if seconds is not None else "-"

    @admin.display(description="executive summary")
    def summary_preview(self, obj):
        return (obj.executive_summary[:120] + "…") if len(obj.executive_summary) > 120 else obj.executive_summary


@admin.register(Stage)
class StageAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["__str__", "session_link", "kind", "status", "parallel_type", "started_at"]
    list_filter = ["status", "kind", "parallel_type"]
    search_fields = ["name", "session__id"]
    inlines = [ExecutionInline]
    readonly_fields = [f.name for f in Stage._meta.fields] + ["session_link"]

    @admin.display(description="session")
    def session_link(self, obj):
        return _link(obj.session)


@admin.register(AgentExecution)
class AgentExecutionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["agent_name", "session_link", "stage_link", "iteration_strategy", "llm_provider", "status",
                    "current_iteration", "total_tokens"]
    list_filter = ["status", "iteration_strategy", "llm_provider"]
    search_fields = ["agent_name", "session__id", "error_message"]
    inlines = [TimelineInline, MessageInline]
    readonly_fields = [f.name for f in AgentExecution._meta.fields] + ["session_link", "stage_link"]

    @admin.display(description="session")
    def session_link(self, obj):
        return _link(obj.session)

    @admin.display(description="stage")
    def stage_link(self, obj):
        return _link(obj.stage)


@admin.register(TimelineEvent)
class TimelineEventAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["__str__", "session", "execution", "event_type", "status", "created_at"]
    list_filter = ["event_type", "status"]
    search_fields = ["content", "session__id"]
    readonly_fields = [f.name for f in TimelineEvent._meta.fields]


@admin.register(Message)
class MessageAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["__str__", "execution", "iteration", "role", "tool_name"]
    list_filter = ["role"]
    search_fields = ["content", "session__id"]
    readonly_fields = [f.name for f in Message._meta.fields]


@admin.register(LLMInteraction)
class LLMInteractionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["__str__", "session", "execution", "iteration", "success", "total_tokens", "duration_ms",
                    "created_at"]
    list_filter = ["interaction_type", "success", "provider", "model"]
    search_fields = ["session__id", "error_message"]
    exclude = ["conversation"]
    readonly_fields = [f.name for f in LLMInteraction._meta.fields if f.name != "conversation"] + ["conversation_sent"]

    @admin.display(description="conversation")
    def conversation_sent(self, obj: LLMInteraction) -> str:
        """As it was sent: the long texts the session stores once are put back in place."""
        return json.dumps(llm_conversations([obj])[0].conversation, indent=1, ensure_ascii=False)


@admin.register(MCPInteraction)
class MCPInteractionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["__str__", "session", "execution", "success", "summarized", "raw_size", "duration_ms",
                    "created_at"]
    list_filter = ["server", "tool", "success", "summarized"]
    search_fields = ["session__id", "tool", "error_message"]
    readonly_fields = [f.name for f in MCPInteraction._meta.fields]


@admin.register(Event)
class EventAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "channel", "type", "session", "created_at"]
    list_filter = ["type"]
    search_fields = ["channel", "session__id"]
    readonly_fields = [f.name for f in Event._meta.fields]


class ChatUserMessageInline(ReadOnlyInline):
    model = ChatUserMessage
    fields = readonly_fields = ("content", "author", "created_at")


@admin.register(Chat)
class ChatAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "session", "created_by", "created_at"]
    search_fields = ["session__id", "created_by"]
    inlines = [ChatUserMessageInline]
    readonly_fields = [f.name for f in Chat._meta.fields]


@admin.register(ChatUserMessage)
class ChatUserMessageAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["__str__", "chat", "author", "created_at"]
    search_fields = ["content", "author"]
    readonly_fields = [f.name for f in ChatUserMessage._meta.fields]


@admin.register(APIToken)
class APITokenAdmin(admin.ModelAdmin):
    """Revoke an API client's token by deleting it. Tokens are made by `manage.py create_api_token NAME`, which
    shows the token once; only its digest is stored, and not shown here."""

    list_display = ["user", "created_at"]
    fields = readonly_fields = ("user", "created_at")
    search_fields = ["user__username"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(SessionScore)
class SessionScoreAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["session_link", "status", "score", "support", "tags", "provider", "scored_at"]
    list_filter = ["status", "support", "provider"]
    search_fields = ["session__id", "rationale", "error"]
    readonly_fields = [f.name for f in SessionScore._meta.fields]

    @admin.display(description="session")
    def session_link(self, obj):
        return _link(obj.session)


@admin.register(SessionReview)
class SessionReviewAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["session_link", "rating", "author", "updated_at"]
    list_filter = ["rating", "author"]
    search_fields = ["session__id", "feedback", "action_taken", "author"]
    readonly_fields = [f.name for f in SessionReview._meta.fields]

    @admin.display(description="session")
    def session_link(self, obj):
        return _link(obj.session)


@admin.register(Memory)
class MemoryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """What TARSy learned, with provenance and use. Read-only like the session records (corrections go through
    PATCH /api/v1/memories/<id>, which masks and re-validates); retiring is an action."""

    list_display = ["id", "kind", "short_text", "alert_type", "confidence", "state", "use_count", "session_link",
                    "confirmed_at"]
    list_filter = ["state", "kind", "alert_type"]
    search_fields = ["text", "session__id"]
    readonly_fields = [f.name for f in Memory._meta.fields]
    actions = ["retire"]

    @admin.display(description="text")
    def short_text(self, obj):
        return obj.text[:120]

    @admin.display(description="session")
    def session_link(self, obj):
        return _link(obj.session)

    @admin.action(description="Retire the selected memories")
    def retire(self, request, queryset):
        for memory_id in queryset.values_list("id", flat=True):
            memories.memory_retire(memory_id=memory_id, reason=f"retired in the admin by {request.user}",
                                   actor=request.user.get_username())


class SilenceForm(forms.ModelForm):
    """A new silence, checked by the same rules as the API's (tarsy.services.silences)."""

    class Meta:
        model = Silence
        fields = ["alert_type", "matchers", "mode", "starts_at", "ends_at", "reason"]

    def clean(self):
        data = super().clean() or {}
        if data.get("ends_at") is None:  # missing or not a date: its own field error says which
            raise forms.ValidationError("starts_at and ends_at are required")
        try:
            self.silence_fields = silences.silence_validate(
                reason=data.get("reason", ""), ends_at=data["ends_at"], starts_at=data.get("starts_at"),
                alert_type=data.get("alert_type", ""), matchers=data.get("matchers"), mode=data.get("mode", ""))
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from exc
        return data


@admin.register(Silence)
class SilenceAdmin(admin.ModelAdmin):
    """Maintenance windows: added here or through the API, never edited (end one and add another, so the
    record shows what was in force when); ending early is an action."""

    form = SilenceForm
    list_display = ["id", "alert_type", "matchers", "mode", "starts_at", "ends_at", "created_by", "reason"]
    list_filter = ["mode", "alert_type"]
    search_fields = ["reason", "created_by", "alert_type"]
    actions = ["end_now"]

    def has_change_permission(self, request, obj=None):
        return obj is None  # the list and the add form, no edits

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        created = silences.silence_create(actor=str(request.user), **form.cleaned_data)
        obj.pk = created.pk
        obj.refresh_from_db()

    @admin.action(description="End the selected silences now")
    def end_now(self, request, queryset):
        for silence_id in queryset.values_list("id", flat=True):
            try:
                silences.silence_end(silence_id=silence_id, actor=str(request.user))
            except ServiceError as exc:
                self.message_user(request, exc.message, level="warning")
