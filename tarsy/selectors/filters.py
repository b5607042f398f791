"""The session history filter, one for the API and the dashboard: status (several), alert type, chain, author,
text search, creation time (range or recent window), automatic score and human review, and ordering. The API
answers 400 for a value it cannot use; the dashboard drops that value and says so (tarsy.dashboard.history)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, time, timedelta

import django_filters
from django import forms
from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.models import (
    BooleanField,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Value,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Lower, StrIndex
from django.db.models.lookups import GreaterThan
from django.utils import timezone
from django_filters.fields import IsoDateTimeField

from tarsy.errors import ValidationFailed
from tarsy.models import FAILURE_TAGS, AlertSession, Rating, ScoreStatus, SessionStatus, Support, TimelineEvent

# PostgreSQL: each timeline event's stored, GIN-indexed `to_tsvector('simple', content)` (migration 0003).
# Unqualified: Django aliases the subquery's table, the only one in its scope with the column.
_TIMELINE_MATCH = "search_vector @@ websearch_to_tsquery('simple', %s)"
MIN_SEARCH_CHARS = 3  # shorter terms match nearly everything and cost a full scan
# A substring search costs up to stored text × term length; nobody searches for a paragraph.
MAX_SEARCH_CHARS = 200
_QUERY_CANCELED = "57014"  # PostgreSQL's SQLSTATE for a statement stopped by statement_timeout
ORDERING_FIELDS = ("created_at", "status", "alert_type", "author", "duration", "total_tokens", "cost_usd", "score")
_ORDERING_PATHS = {"score": "score__score",
                  "total_tokens": "counters__total_tokens", "cost_usd": "counters__cost_usd"}
_NULLS_LAST = ("duration", "score")  # not finished / not scored: last either way
SCORE_STATES = ("scored", "pending", "failed", "unscored")
REVIEW_STATES = ("needs_review", "reviewed")
CREATED_WITHIN = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7),
                  "30d": timedelta(days=30)}
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


class _CommaMultipleChoiceField(forms.MultipleChoiceField):
    """Accepts `?status=a&status=b` and `?status=a,b` alike."""

    def to_python(self, value):
        values = super().to_python(value)
        return [part.strip() for item in values for part in item.split(",") if part.strip()]


class CommaMultipleChoiceFilter(django_filters.MultipleChoiceFilter):
    field_class = _CommaMultipleChoiceField


def search_sessions(queryset: QuerySet, term: str) -> QuerySet:
    """Title, alert data, final analysis, executive summary and timeline content.

    PostgreSQL: full-text (websearch syntax, `simple` dictionary so identifiers like pod names survive) plus a
    substring match on the session's own text; other databases (embedded SQLite): substring match everywhere.
    The substring match is `strpos`/`instr` on lower-cased text, not LIKE: LIKE's `%term%` backtracks (seconds
    for a 200-character term in a 1 MB alert), a plain substring search stays linear in practice.
    The timeline is matched on its stored vectors with one uncorrelated `IN`: correlated per session,
    PostgreSQL probes the index once per session, which for a common word costs seconds.
    """
    own_text = (_contains("title", term) | _contains("alert_data", term) | _contains("final_analysis", term)
                | _contains("executive_summary", term))
    if connection.vendor == "postgresql":
        from django.contrib.postgres.search import SearchQuery, SearchVector

        in_timeline = TimelineEvent.objects.alias(
            matched=RawSQL(_TIMELINE_MATCH, (term,), output_field=BooleanField())).filter(matched=True)
        vector = SearchVector("alert_data", "final_analysis", "executive_summary", config="simple")
        query = SearchQuery(term, config="simple", search_type="websearch")
        return queryset.alias(_search=vector).filter(
            own_text | Q(_search=query) | Q(id__in=in_timeline.values("session_id")))
    in_timeline = TimelineEvent.objects.filter(Q(session_id=OuterRef("pk")) & _contains("content", term))
    return queryset.filter(own_text | Exists(in_timeline))


def _contains(field: str, term: str) -> Q:
    """Case-insensitive substring match by position (see `search_sessions`)."""
    return Q(GreaterThan(StrIndex(Lower(field), Lower(Value(term))), 0))


class SearchTooSlow(ValidationFailed):
    """A search stopped by its time limit: the caller asks for something more distinctive."""


@contextmanager
def search_deadline() -> Iterator[None]:
    """PostgreSQL: the queries run inside it run under `TARSY_SEARCH_TIMEOUT_MS` (a transaction-local statement
    timeout), so one search cannot hold a connection and a request thread for the default 30 s; a search stopped
    by it raises `SearchTooSlow`. SQLite needs no limit: term length and the substring search bound its cost."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('statement_timeout'), set_config('statement_timeout', %s, true)",
                           [str(settings.TARSY_SEARCH_TIMEOUT_MS)])
            previous = cursor.fetchone()[0]
        try:
            yield
        except OperationalError as exc:
            if getattr(exc.__cause__, "sqlstate", None) != _QUERY_CANCELED:
                raise
            raise SearchTooSlow(f"The search ran past its {settings.TARSY_SEARCH_TIMEOUT_MS / 1000:g} s limit "
                                "and was stopped; search for a more distinctive term.") from None
        with connection.cursor() as cursor:  # within an outer transaction, the rest of it keeps its own limit
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [previous])


def with_duration(queryset: QuerySet) -> QuerySet:
    return queryset.annotate(duration=ExpressionWrapper(F("completed_at") - F("started_at"),
                                                        output_field=DurationField()))


class _UtcDateTimeField(IsoDateTimeField):
    """ISO 8601, normalised to UTC: Python accepts offsets PostgreSQL refuses (beyond ±15:59). A bare date
    (what a date picker sends) means the start of that day, or its end for an upper bound (`day_end`)."""

    def __init__(self, *args, day_end: bool = False, **kwargs):
        self.day_end = day_end
        super().__init__(*args, **kwargs)

    def to_python(self, value):
        moment = super().to_python(value)
        if moment is None:
            return moment
        if self.day_end and isinstance(value, str) and _DATE_ONLY.fullmatch(value.strip()):
            moment = datetime.combine(moment.date(), time.max, tzinfo=moment.tzinfo)
        try:
            return moment.astimezone(UTC)
        except (OverflowError, ValueError):
            raise forms.ValidationError("Date and time out of range.") from None


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = _UtcDateTimeField


class SessionOrderingFilter(django_filters.OrderingFilter):
    """Sessions without a duration (not finished) or a score sort last either way; ties go newest first."""

    def get_ordering_value(self, param):
        name = param.lstrip("-")
        if name in _NULLS_LAST:
            field = F(_ORDERING_PATHS.get(name, name))
            return field.desc(nulls_last=True) if param.startswith("-") else field.asc(nulls_last=True)
        return super().get_ordering_value(param)

    def filter(self, qs, value):
        params = [param for param in value or () if param]
        if not params:
            return qs
        ordering = [self.get_ordering_value(param) for param in params]
        if not any(param.lstrip("-") == "created_at" for param in params):
            ordering.append("-created_at")
        return qs.order_by(*ordering)


class SessionFilter(django_filters.FilterSet):
    status = CommaMultipleChoiceFilter(choices=SessionStatus.choices,
                                       help_text="One or more statuses (repeat the parameter or separate by commas)")
    alert_type = django_filters.CharFilter()
    chain_id = django_filters.CharFilter()
    author = django_filters.CharFilter()
    title = django_filters.CharFilter(lookup_expr="icontains", help_text="Text in the session's title")
    search = django_filters.CharFilter(method="filter_search", min_length=MIN_SEARCH_CHARS,
                                       max_length=MAX_SEARCH_CHARS,
                                       help_text="Text in alert data, final analysis or timeline (3–200 characters)")
    start_date = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte",
                                   help_text="Created at or after (ISO 8601; a date alone: from its start)")
    end_date = UtcDateTimeFilter(field_name="created_at", lookup_expr="lte", day_end=True,
                                 help_text="Created at or before (ISO 8601; a date alone: to its end)")
    created_within = django_filters.ChoiceFilter(choices=[(k, k) for k in CREATED_WITHIN],
                                                 method="filter_created_within",
                                                 help_text="Created within the last hour, day, week or month")
    score_min = django_filters.NumberFilter(field_name="score__score", lookup_expr="gte",
                                           help_text="Automatic score at least this (0–100)")
    score_max = django_filters.NumberFilter(field_name="score__score", lookup_expr="lte",
                                           help_text="Automatic score at most this (0–100)")
    support = django_filters.ChoiceFilter(field_name="score__support", choices=Support.choices,
                                          help_text="The scorer's support level (the score's band)")
    scoring = django_filters.ChoiceFilter(choices=[(s, s) for s in SCORE_STATES], method="filter_scoring",
                                          help_text="Scoring state: scored, pending, failed or unscored")
    tag = django_filters.ChoiceFilter(choices=[(t, t) for t in FAILURE_TAGS], method="filter_tag",
                                      help_text="Sessions scored with this failure tag")
    review = django_filters.ChoiceFilter(choices=[(s, s) for s in REVIEW_STATES], method="filter_review",
                                         help_text="needs_review: completed and not reviewed; reviewed: has a review")
    rating = CommaMultipleChoiceFilter(field_name="review__rating", choices=Rating.choices,
                                       help_text="One or more review ratings")
    ordering = SessionOrderingFilter(fields=[(_ORDERING_PATHS.get(f, f), f) for f in ORDERING_FIELDS],
                                     help_text="Sort key; prefix with '-' for descending")

    class Meta:
        model = AlertSession
        fields = ["status", "alert_type", "chain_id", "author", "title", "search", "start_date", "end_date",
                  "created_within", "score_min", "score_max", "support", "scoring", "tag", "review", "rating"]

    def filter_scoring(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        if value == "unscored":
            return queryset.filter(score__isnull=True)
        return queryset.filter(score__status={"scored": ScoreStatus.SCORED, "pending": ScoreStatus.PENDING,
                                              "failed": ScoreStatus.FAILED}[value])

    def filter_tag(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        if connection.vendor == "postgresql":
            return queryset.filter(score__tags__contains=[value])
        return queryset.filter(score__tags__icontains=f'"{value}"')  # SQLite has no JSON containment

    def filter_review(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        if value == "reviewed":
            return queryset.filter(review__isnull=False)
        return queryset.filter(review__isnull=True, status=SessionStatus.COMPLETED)

    def filter_search(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return search_sessions(queryset, value.strip()) if value.strip() else queryset

    def filter_created_within(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(created_at__gte=timezone.now() - CREATED_WITHIN[value])

    def is_valid(self) -> bool:
        valid = super().is_valid()
        if valid:
            start, end = self.form.cleaned_data.get("start_date"), self.form.cleaned_data.get("end_date")
            if start and end and start > end:
                self.form.add_error("end_date", "end_date must not be before start_date")
                return False
        return valid
