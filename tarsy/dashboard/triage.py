"""The Triage view (needs review / in progress / resolved today, live over the sessions channel) and the triage
panel of a session page. Actions go through the API (tarsy/static/tarsy/triage.js), as every dashboard write does."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_GET

from tarsy.config import get_config
from tarsy.models import AlertSession, Rating, Resolution, Severity, TriageStatus
from tarsy.selectors.events import event_cursor
from tarsy.selectors.sessions import session_filter_options
from tarsy.selectors.triage import TriageFilters, triage_board, triage_people
from tarsy.streaming.publisher import SESSIONS_CHANNEL
from tarsy.web.inputs import ascii_int, printable, text_problem

from .access import dashboard_view
from .context import page_context

FILTERS = ("assignee", "severity", "chain_id", "score_min", "score_max")


def triage_filters(query: QueryDict) -> tuple[TriageFilters, list[str]]:
    """The filters from the URL; a value that cannot be used is dropped and a note says why (the page renders)."""
    notes: list[str] = []
    raw = {name: query.get(name, "").strip() for name in FILTERS}
    for name, value in raw.items():
        if value and text_problem(value):
            notes.append(f"The {name} filter was ignored: {text_problem(value)}")
            raw[name] = ""
    if raw["severity"] and raw["severity"] not in Severity.values:
        notes.append(f"The severity filter was ignored: {printable(raw['severity'][:40])!r} is not one of "
                     f"{', '.join(Severity.values)}.")
        raw["severity"] = ""
    scores: dict[str, int | None] = {}
    for name in ("score_min", "score_max"):
        score = ascii_int(raw[name]) if raw[name] else None
        if raw[name] and (score is None or score > 100):
            notes.append(f"The {name} filter was ignored: {printable(raw[name][:40])!r} is not a score from 0 to 100.")
            raw[name], score = "", None
        scores[name] = score
    return TriageFilters(assignee=raw["assignee"][:255], severity=raw["severity"], chain_id=raw["chain_id"][:200],
                         score_min=scores["score_min"], score_max=scores["score_max"]), notes


@require_GET
@dashboard_view
def triage_page(request):
    """Three columns with counts; filters are query parameters, so a shared link shows the same view."""
    cursor = event_cursor(SESSIONS_CHANNEL)  # read before the rows: nothing published in between is missed
    filters, notes = triage_filters(request.GET)
    context = page_context(request, cursor=cursor, columns=triage_board(filters=filters), filters=filters,
                           notes=notes, people=triage_people(), severities=Severity.values,
                           chain_ids=session_filter_options()["chain_ids"], resolutions=Resolution.choices,
                           filtered=any(request.GET.get(name) for name in FILTERS))
    if request.GET.get("fragment") == "board":
        return render(request, "dashboard/_triage_board.html", context)
    return render(request, "dashboard/triage.html", context)


def session_triage_panel(session: AlertSession) -> dict[str, Any]:
    """What a session page's triage panel shows and offers (the actions that fit the current state)."""
    state = session.triage_status or (TriageStatus.NEEDS_REVIEW if session.is_terminal else "")
    open_ = state in (TriageStatus.NEEDS_REVIEW, TriageStatus.IN_PROGRESS)
    return {
        "state": state,
        "activity": list(session.triage_activity.all()),
        "can_claim": state == TriageStatus.NEEDS_REVIEW, "can_assign": open_, "can_resolve": open_,
        "can_reopen": state == TriageStatus.RESOLVED, "people": triage_people(),
        "free_assignee": get_config().system.auth.mode == "proxy",  # the proxy's identities are listed nowhere
        "resolutions": Resolution.choices, "ratings": Rating.choices,
    }
