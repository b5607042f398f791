"""Session history filters: status (several), alert type, chain, author, text search, time range, ordering."""

from __future__ import annotations

from datetime import UTC

import django_filters
from django import forms
from django.db import connection
from django.db.models import DurationField, Exists, ExpressionWrapper, F, OuterRef, Q, QuerySet
from django_filters.fields import IsoDateTimeField

from tarsy.models import AlertSession, SessionStatus, TimelineEvent

MIN_SEARCH_CHARS = 3  # shorter terms match nearly everything and cost a full scan (ANCHORS)
ORDERING_FIELDS = ("created_at", "status", "alert_type", "author", "duration")


class _CommaMultipleChoiceField(forms.MultipleChoiceField):
    """Accepts `?status=a&status=b` and `?status=a,b` alike."""

    def to_python(self, value):
        values = super().to_python(value)
        return [part.strip() for item in values for part in item.split(",") if part.strip()]


class CommaMultipleChoiceFilter(django_filters.MultipleChoiceFilter):
    field_class = _CommaMultipleChoiceField


def search_sessions(queryset: QuerySet, term: str) -> QuerySet:
    """Alert data, final analysis, executive summary and timeline content.

    PostgreSQL: full-text (websearch syntax, `simple` dictionary so identifiers like pod names survive) plus a
    substring match on the session's own text; other databases (embedded SQLite): substring match everywhere.
    """
    own_text = Q(alert_data__icontains=term) | Q(final_analysis__icontains=term) | Q(
        executive_summary__icontains=term)
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery, SearchVector

        query = SearchQuery(term, config="simple", search_type="websearch")
        in_timeline = TimelineEvent.objects.annotate(vector=SearchVector("content", config="simple")).filter(
            session_id=OuterRef("pk"), vector=query)
        vector = SearchVector("alert_data", "final_analysis", "executive_summary", config="simple")
        return queryset.annotate(_search=vector).filter(own_text | Q(_search=query) | Exists(in_timeline))
    in_timeline = TimelineEvent.objects.filter(session_id=OuterRef("pk"), content__icontains=term)
    return queryset.filter(own_text | Exists(in_timeline))


def with_duration(queryset: QuerySet) -> QuerySet:
    return queryset.annotate(duration=ExpressionWrapper(F("completed_at") - F("started_at"),
                                                        output_field=DurationField()))


class _UtcDateTimeField(IsoDateTimeField):
    """ISO 8601, normalised to UTC: Python accepts offsets PostgreSQL refuses (beyond ±15:59)."""

    def to_python(self, value):
        value = super().to_python(value)
        if value is None:
            return value
        try:
            return value.astimezone(UTC)
        except (OverflowError, ValueError):
            raise forms.ValidationError("Date and time out of range.") from None


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = _UtcDateTimeField


class SessionFilter(django_filters.FilterSet):
    status = CommaMultipleChoiceFilter(choices=SessionStatus.choices,
                                       help_text="One or more statuses (repeat the parameter or separate by commas)")
    alert_type = django_filters.CharFilter()
    chain_id = django_filters.CharFilter()
    author = django_filters.CharFilter()
    search = django_filters.CharFilter(method="filter_search", min_length=MIN_SEARCH_CHARS,
                                       help_text="Text in alert data, final analysis or timeline (≥ 3 characters)")
    start_date = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte",
                                                  help_text="Created at or after (ISO 8601)")
    end_date = UtcDateTimeFilter(field_name="created_at", lookup_expr="lte",
                                                help_text="Created at or before (ISO 8601)")
    ordering = django_filters.OrderingFilter(fields=[(f, f) for f in ORDERING_FIELDS],
                                             help_text="Sort key; prefix with '-' for descending")

    class Meta:
        model = AlertSession
        fields = ["status", "alert_type", "chain_id", "author", "search", "start_date", "end_date"]

    def filter_search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return search_sessions(queryset, value.strip()) if value.strip() else queryset

    def is_valid(self) -> bool:
        valid = super().is_valid()
        if valid:
            start, end = self.form.cleaned_data.get("start_date"), self.form.cleaned_data.get("end_date")
            if start and end and start > end:
                self.form.add_error("end_date", "end_date must not be before start_date")
                return False
        return valid
