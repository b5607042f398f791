"""The Memory page: what TARSy remembers, searchable and filterable, each memory editable, retirable and
reactivatable (through the API, by tarsy/static/tarsy/memories.js), with its provenance, use and record of
changes (who, when, why, before and after)."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.shortcuts import render
from django.views.decorators.http import require_GET

from agents.memory.reflection import MAX_MEMORY_CHARS
from tarsy.models import MemoryKind, MemoryState
from tarsy.selectors.memories import memories_list

from .access import dashboard_view
from .context import page_context

PAGE_SIZE = 50


@require_GET
@dashboard_view
def memories_page(request):
    """Search by words; filter by kind, state and alert type (unknown filter values are ignored and said)."""
    params = {name: request.GET.get(name, "").strip() for name in ("search", "kind", "state", "alert_type")}
    notes = []
    for name, allowed in (("kind", MemoryKind.values), ("state", MemoryState.values)):
        if params[name] and params[name] not in allowed:
            notes.append(f"The {name} filter was ignored: {params[name]!r} is not one of {', '.join(allowed)}.")
            params[name] = ""
    rows = memories_list(search=params["search"][:500], kind=params["kind"], state=params["state"],
                         alert_type=params["alert_type"][:200])
    rows = rows.select_related("session").prefetch_related("changes")
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "dashboard/memories.html", page_context(
        request, page=page, params=params, notes=notes, kinds=MemoryKind.choices, states=MemoryState.choices,
        max_chars=MAX_MEMORY_CHARS))
