"""Dashboard pages (server-rendered) and the HTML fragments their scripts fetch to stay live.

Pages read through tarsy.selectors (as the API does) and presenters; every write (submit, cancel, chat) goes
through the API.
"""

from __future__ import annotations

import platform
from functools import partial
from importlib import metadata
from pathlib import Path

from django.conf import settings
from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from tarsy.config import get_config
from tarsy.models import AlertSession, OccurrenceKind, Rating, SessionStatus, Stage, StageKind, TimelineEvent
from tarsy.selectors.events import event_cursor, event_position
from tarsy.selectors.filters import CREATED_WITHIN
from tarsy.selectors.queue import queue_position
from tarsy.selectors.sessions import RECENT_OCCURRENCES, session_filter_options, session_occurrences, sessions_active
from tarsy.services.chats import chat_available
from tarsy.streaming.publisher import SESSIONS_CHANNEL, session_channel
from tarsy.web.health import checks
from tarsy.web.inputs import ascii_int
from tarsy.web.responses import json_error

from . import presenters
from .access import dashboard_view
from .actions import session_actions_panel
from .citations import citations_view, link_citations
from .context import page_context
from .history import history
from .quality import session_quality
from .triage import session_triage_panel

CANCELLABLE = (SessionStatus.PENDING, SessionStatus.IN_PROGRESS)
MAX_FRAGMENT_EVENTS = 200  # one batch of completed events re-rendered per request
SORTS = [("-created_at", "Newest first"), ("created_at", "Oldest first"), ("-duration", "Longest"),
         ("duration", "Shortest"), ("-total_tokens", "Most tokens"), ("total_tokens", "Fewest tokens"),
         ("-cost_usd", "Most expensive"), ("cost_usd", "Least expensive"),
         ("status", "Status"), ("alert_type", "Alert type"), ("author", "Author"), ("-score", "Highest score"),
         ("score", "Lowest score")]
VERSIONED_PACKAGES = ["Django", "djangorestframework", "celery", "channels", "uvicorn", "mcp", "google-genai",
                      "langchain-core", "pydantic"]


def _session(session_id) -> AlertSession:
    try:
        return AlertSession.objects.select_related("counters").get(id=session_id)
    except AlertSession.DoesNotExist as exc:
        raise Http404("session not found") from exc


# ---- sessions list -----------------------------------------------------------------------------------------------


@require_GET
@dashboard_view
def sessions_page(request):
    """Active and queued panels and the history table; the filters are the API's (same names, same meaning)."""
    cursor = event_cursor(SESSIONS_CHANNEL)
    context = page_context(request, cursor=cursor, history=history(request.GET), options=session_filter_options(),
                    created_within=list(CREATED_WITHIN), sorts=SORTS, query=_query_without_page(request),
                    ratings=Rating.choices,
                    **presenters.active_panels(sessions_active()))
    fragment = request.GET.get("fragment")
    if fragment == "active":
        return render(request, "dashboard/_active.html", context)
    if fragment == "history":
        return render(request, "dashboard/_history.html", context)
    return render(request, "dashboard/sessions.html", context)


def _query_without_page(request) -> str:
    query = request.GET.copy()
    for key in ("page", "fragment"):
        query.pop(key, None)
    return query.urlencode()


# ---- one session -------------------------------------------------------------------------------------------------


def _session_context(request, session: AlertSession, cursor: tuple[int, int | None]) -> dict:
    stages = presenters.session_stage_groups(session)
    cited = citations_view(session.citations)
    return page_context(
        request, session=session, cursor=cursor[0], cursor_seq=cursor[1], cancellable=session.status in CANCELLABLE,
        position=queue_position(session), chat_available=chat_available(session),
        related_alerts=session_occurrences(session_id=session.id, kind=OccurrenceKind.RELATED,
                                           limit=RECENT_OCCURRENCES),
        chat_running=Stage.objects.filter(session=session, kind=StageKind.CHAT,
                                          status__in=["pending", "active"]).exists(),
        alert_text=presenters.pretty_data(session.alert_data),
        summary_html=presenters.render_markdown(session.executive_summary),
        final_html=link_citations(presenters.render_markdown(session.final_analysis), cited), citations=cited,
        duration=presenters.duration_text((session.duration_seconds or 0) * 1000) if session.duration_seconds
        is not None else "", quality=session_quality(session), triage=session_triage_panel(session),
        actions=partial(session_actions_panel, request, session),  # read only where a template shows it
        **stages,
    )


@require_GET
@dashboard_view
def session_page(request, session_id):
    cursor = event_position(session_channel(session_id))  # the id and number of the latest event
    session = _session(session_id)
    return render(request, "dashboard/session.html", _session_context(request, session, cursor))


SESSION_FRAGMENTS = {"header": "dashboard/_session_header.html", "summary": "dashboard/_summary.html",
                     "quality": "dashboard/_quality.html", "triage": "dashboard/_triage.html",
                     "actions": "dashboard/_actions.html",
                     "chat": "dashboard/_chat.html", "loose": "dashboard/_session_items.html"}


@require_GET
@dashboard_view
def session_fragment(request, session_id, name):
    if name not in SESSION_FRAGMENTS:
        raise Http404("unknown fragment")
    session = _session(session_id)
    return render(request, SESSION_FRAGMENTS[name], _session_context(request, session, (0, None)))


@require_GET
@dashboard_view
def stage_fragment(request, session_id, stage_id):
    session = _session(session_id)
    group, is_chat = presenters.group_for_stage(session, stage_id)
    if group is None:
        raise Http404("stage not found")
    template = "dashboard/_chat_turn.html" if is_chat else "dashboard/_stage_group.html"
    return render(request, template, {"group": group, "session": session})


@require_GET
@dashboard_view
def events_fragment(request, session_id):
    """Rendered timeline items by id, for events that completed while the page was open."""
    ids = [ascii_int(part) for part in request.GET.get("ids", "").split(",") if part]
    if None in ids:
        return json_error(400, "bad_request", {"ids": ["Comma-separated event ids, in ASCII digits."]})
    ids = ids[:MAX_FRAGMENT_EVENTS]
    events = TimelineEvent.objects.filter(session_id=session_id, id__in=ids).select_related("stage", "session")
    html = {str(e.id): render_to_string("dashboard/_event.html", {"item": presenters.event_item(e)}) for e in events}
    return JsonResponse({"events": html, "missing": [i for i in ids if str(i) not in html]})


@require_GET
@dashboard_view
def trace_page(request, session_id):
    session = _session(session_id)
    return render(request, "dashboard/trace.html", page_context(request, session=session,
                                                         **presenters.session_trace(session)))


# ---- submit and system -------------------------------------------------------------------------------------------


@require_GET
@dashboard_view
def submit_page(request):
    config = get_config()
    prefill = ""
    source = request.GET.get("from")
    if source:
        earlier = AlertSession.objects.filter(id=source).first() if _is_uuid(source) else None
        prefill = earlier.alert_data if earlier else ""
    servers = [{"name": name, "transport": cfg.transport.type} for name, cfg in sorted(config.mcp_servers.items())]
    return render(request, "dashboard/submit.html", page_context(
        request, prefill=prefill, servers=servers, allowed_runbook_domains=config.system.runbooks.allowed_domains))


def _is_uuid(value: str) -> bool:
    import uuid

    try:
        uuid.UUID(value)
        return True
    except ValueError:
        return False


@require_GET
@dashboard_view
def system_page(request):
    config = get_config()
    health = checks()
    return render(request, "dashboard/system.html", page_context(
        request, warnings=config.warnings(), health=health, workers=health["workers"], versions=_versions(),
        config=config,
        config_dir=config.config_dir or "(built-in defaults)", embedded=settings.EMBEDDED,
        providers=sorted(config.llm_providers.items()), chains=sorted(config.chains.items())))


@require_GET
@dashboard_view
def system_mcp_fragment(request):
    """MCP servers with status and tools; checked on demand (cached ~15 s), so the page itself never waits."""
    from agents.mcp.health import check_servers

    servers = check_servers(get_config())
    if request.GET.get("format") == "json":
        return JsonResponse({"servers": servers})
    return render(request, "dashboard/_mcp_servers.html", {"servers": servers})


def _versions() -> list[tuple[str, str]]:
    rows = [("TARSy", _tarsy_version()), ("Python", platform.python_version())]
    for package in VERSIONED_PACKAGES:
        try:
            rows.append((package, metadata.version(package)))
        except metadata.PackageNotFoundError:
            continue
    return rows


def _tarsy_version() -> str:
    import tomllib

    try:
        with open(Path(settings.BASE_DIR) / "pyproject.toml", "rb") as handle:
            return tomllib.load(handle)["project"]["version"]
    except (OSError, KeyError, ValueError):
        return "unknown"
