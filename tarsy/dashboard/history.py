"""The sessions page's history table: the API's `SessionFilter`, bound leniently, and one page of it.

The page uses the API's parameter names, so a dashboard URL and an API query with the same parameters list the
same sessions. Where the API answers 400, the page must still render: a value the filter cannot use is dropped
and a note says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.paginator import Page, Paginator
from django.http import QueryDict

from agents.quotes import quote
from tarsy.selectors.filters import SearchTooSlow, SessionFilter, search_deadline
from tarsy.selectors.sessions import sessions_list
from tarsy.web.inputs import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ascii_int, printable, text_problem

PREVIEW_CHARS = 180


@dataclass
class History:
    """The filters as applied (what the form shows), the notes about values dropped, and the page."""

    values: dict[str, str]
    statuses: list[str]
    page: Page
    page_size: int
    notes: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return bool(self.statuses or any(value for name, value in self.values.items() if name != "ordering"))


def history(query: QueryDict) -> History:
    notes: list[str] = []
    data = _usable(query, notes)
    try:
        with search_deadline():
            return _history(query, data.copy(), list(notes))
    except SearchTooSlow as slow:
        data.pop("search", None)
        return _history(query, data, [*notes, f"{slow.message} The search filter was ignored."])


def _history(query: QueryDict, data: QueryDict, notes: list[str]) -> History:
    sessions = SessionFilter(data, queryset=sessions_list())
    if not sessions.is_valid():
        for name, errors in sessions.errors.items():
            notes.append(f"The {name} filter was ignored: {' '.join(errors)}")
            data.pop(name, None)
        sessions = SessionFilter(data, queryset=sessions_list())
    page_size = _int(query, "page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, notes)
    page = Paginator(sessions.qs, page_size).get_page(_int(query, "page", 1, 10**6, notes))
    for session in page.object_list:
        session.preview = _preview(session.executive_summary or session.final_analysis or session.error_message)
    values = {name: data.get(name, "") for name in SessionFilter.base_filters if name != "status"}
    return History(values=values, statuses=data.getlist("status"), page=page, page_size=page_size, notes=notes)


def _usable(query: QueryDict, notes: list[str]) -> QueryDict:
    """The filter parameters, less those holding text no query can carry (NUL, lone surrogates) and empty ones."""
    data = QueryDict(mutable=True)
    for name in SessionFilter.base_filters:
        values = [value for value in query.getlist(name) if value.strip()]
        if any(text_problem(value) for value in values):
            notes.append(f"The {name} filter contains characters that cannot be searched for; it was ignored.")
            continue
        if values:
            data.setlist(name, values)
    return data


def _int(query: QueryDict, name: str, default: int, high: int, notes: list[str]) -> int:
    """A whole number in ASCII digits, clamped to [1, high]; anything else gives the default and a note."""
    raw = query.get(name)
    if not raw:
        return default
    value = ascii_int(raw)
    if value is None:
        notes.append(f"{name.replace('_', ' ').capitalize()} {printable(raw[:40])!r} is not a whole number; "
                     f"{default} was used.")
        return default
    return min(max(value, 1), high)


def _preview(text: str) -> str:
    return quote(" ".join((text or "").split()), PREVIEW_CHARS - 1)
