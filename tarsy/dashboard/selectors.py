"""Read-only queries behind the dashboard pages: the sessions history, active panels, a session's stages."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Exists, F, Max, OuterRef, Q
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from agents.timeline_events import MCPToolCallMetadata, read_metadata
from tarsy.api.inputs import ascii_int, printable, text_problem
from tarsy.models import (
    AlertSession,
    Event,
    SessionStatus,
    Stage,
    StageKind,
    TimelineEvent,
)
from tarsy.services.sessions import session_queue_position
from tarsy.streaming.publisher import SESSIONS_CHANNEL, session_channel

DEFAULT_PAGE_SIZE = 25  # ANCHORS: list page size default 25, max 100
MAX_PAGE_SIZE = 100
MIN_SEARCH_CHARS = 3  # shorter searches match nearly everything and only cost a table scan
RANGES = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}
SORTS = {
    "-created_at": ("-created_at",), "created_at": ("created_at",),
    "-duration": (F("duration").desc(nulls_last=True),), "duration": (F("duration").asc(nulls_last=True),),
    "-total_tokens": ("-total_tokens",), "total_tokens": ("total_tokens",),
    "status": ("status", "-created_at"), "alert_type": ("alert_type", "-created_at"),
}
PREVIEW_CHARS = 180


@dataclass
class HistoryFilters:
    """The history table's filters, parsed from (and written back to) the page URL."""

    q: str = ""
    statuses: list[str] = field(default_factory=list)
    alert_type: str = ""
    chain: str = ""
    author: str = ""
    range: str = ""
    start: str = ""
    end: str = ""
    sort: str = "-created_at"
    page: int = 1
    page_size: int = DEFAULT_PAGE_SIZE
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_query(cls, query) -> HistoryFilters:
        """Parsed leniently, as a page must render: a value that cannot be used is dropped with a note saying so."""
        notes: list[str] = []

        def text(name: str, default: str = "") -> str:
            value = query.get(name, default)
            if text_problem(value):
                notes.append(f"The {name} filter contains characters that cannot be searched for; it was ignored.")
                return default
            return value

        f = cls(q=text("q").strip(), alert_type=text("alert_type"), chain=text("chain"), author=text("author"),
                range=text("range"), start=text("start"), end=text("end"), sort=text("sort", "-created_at"),
                notes=notes)
        f.statuses = [s for s in query.getlist("status") if s in SessionStatus.values]
        if f.sort not in SORTS:
            f.sort = "-created_at"
        for name in ("start", "end"):
            value = getattr(f, name)
            if value and _bound(value, end=name == "end") is None:
                notes.append(f"{name.capitalize()} {value!r} is not a valid date or date and time; it was ignored.")
                setattr(f, name, "")
        f.page = _int(query, "page", 1, 1, 10**6, notes)
        f.page_size = _int(query, "page_size", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE, notes)
        if f.q and len(f.q) < MIN_SEARCH_CHARS:
            notes.append(f"Search needs at least {MIN_SEARCH_CHARS} characters; it was ignored.")
        return f

    @property
    def active(self) -> bool:
        return bool(self.q or self.statuses or self.alert_type or self.chain or self.author or self.range
                    or self.start or self.end)


def _int(query, name: str, default: int, low: int, high: int, notes: list[str]) -> int:
    """A whole number in ASCII digits, clamped to [low, high]; anything else gives the default and a note."""
    raw = query.get(name)
    if not raw:
        return default
    value = ascii_int(raw)
    if value is None:
        notes.append(f"{name.replace('_', ' ').capitalize()} {printable(raw[:40])!r} is not a whole number; "
                     f"{default} was used.")
        return default
    return min(max(value, low), high)


def _bound(value: str, end: bool) -> datetime | None:
    """A date (the whole day) or date and time; None when unparseable or impossible (2024-02-30)."""
    try:
        moment = parse_datetime(value)
        if moment is None:
            day = parse_date(value)
            if day is None:
                return None
            moment = datetime.combine(day, datetime.max.time() if end else datetime.min.time())
        return timezone.make_aware(moment) if timezone.is_naive(moment) else moment
    except (ValueError, OverflowError):
        return None


def sessions_history(filters: HistoryFilters):
    """The filtered, sorted history queryset (soft-deleted sessions are never shown)."""
    qs = AlertSession.objects.annotate(duration=F("completed_at") - F("started_at"))
    if filters.statuses:
        qs = qs.filter(status__in=filters.statuses)
    for name, column in (("alert_type", "alert_type"), ("chain", "chain_id"), ("author", "author")):
        if getattr(filters, name):
            qs = qs.filter(**{column: getattr(filters, name)})
    if filters.range in RANGES:
        qs = qs.filter(created_at__gte=timezone.now() - RANGES[filters.range])
    start, end = _bound(filters.start, False), _bound(filters.end, True)
    if start:
        qs = qs.filter(created_at__gte=start)
    if end:
        qs = qs.filter(created_at__lte=end)
    if len(filters.q) >= MIN_SEARCH_CHARS:
        in_timeline = TimelineEvent.objects.filter(session=OuterRef("pk"), content__icontains=filters.q)
        qs = qs.filter(Q(alert_data__icontains=filters.q) | Q(final_analysis__icontains=filters.q)
                       | Q(executive_summary__icontains=filters.q) | Q(alert_type__icontains=filters.q)
                       | Exists(in_timeline))
    return qs.order_by(*SORTS[filters.sort])


def history_page(filters: HistoryFilters):
    paginator = Paginator(sessions_history(filters).defer("alert_data"), filters.page_size)
    page = paginator.get_page(filters.page)
    for session in page.object_list:
        session.preview = _preview(session.executive_summary or session.final_analysis or session.error_message)
    return page


def _preview(text: str) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def filter_options() -> dict[str, list[str]]:
    live = AlertSession.objects.order_by()
    return {
        "statuses": list(SessionStatus.values),
        "alert_types": sorted(filter(None, live.values_list("alert_type", flat=True).distinct())),
        "chains": sorted(filter(None, live.values_list("chain_id", flat=True).distinct())),
        "authors": sorted(filter(None, live.values_list("author", flat=True).distinct())),
    }


PHASES = {
    "llm_thinking": "thinking", "llm_response": "writing", "llm_tool_call": "choosing a tool",
    "mcp_tool_call": "calling a tool", "mcp_tool_summary": "summarizing a tool result",
    "tool_result": "reading a tool result", "final_analysis": "writing the analysis",
    "executive_summary": "writing the executive summary", "error": "recovering from an error",
}


def _phase(session: AlertSession) -> str:
    event = TimelineEvent.objects.filter(session=session).order_by("-created_at", "-id").first()
    if event is None:
        return "starting"
    metadata = read_metadata(event.event_type, event.metadata)
    if isinstance(metadata, MCPToolCallMetadata) and metadata.qualified_name:
        return f"calling {metadata.qualified_name}"
    return PHASES.get(event.event_type, event.event_type.replace("_", " "))


def active_sessions() -> dict[str, list[AlertSession]]:
    """Running (with current stage and phase) and queued (with position) sessions, for the live panels."""
    running = list(AlertSession.objects.filter(status__in=[SessionStatus.IN_PROGRESS, SessionStatus.CANCELLING])
                   .defer("alert_data").order_by("started_at"))
    for session in running:
        stage = Stage.objects.filter(session=session).exclude(kind=StageKind.CHAT).order_by("-index").first()
        session.stage_name = stage.name if stage else ""
        session.phase = "cancelling" if session.status == SessionStatus.CANCELLING else _phase(session)
    queued = list(AlertSession.objects.filter(status=SessionStatus.PENDING).defer("alert_data")
                  .order_by("created_at"))
    for position, session in enumerate(queued, start=1):
        session.position = position
    return {"running": running, "queued": queued}


def last_event_id(channel: str) -> int:
    """The catch-up cursor for a page rendered now: read it before the page's data so nothing is missed."""
    return Event.objects.filter(channel=channel).aggregate(m=Max("id"))["m"] or 0


def sessions_cursor() -> int:
    return last_event_id(SESSIONS_CHANNEL)


def session_cursor(session_id: Any) -> int:
    return last_event_id(session_channel(session_id))


def queue_position(session: AlertSession) -> int | None:
    return session_queue_position(session)
