"""The Checks page: proactive checks with their schedule and last result, and the silences (maintenance
windows) in force or ended lately; run a check, add or end a silence through the API (tarsy/static/tarsy/checks.js)."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from tarsy.models import SilenceMode
from tarsy.selectors.checks import checks_overview
from tarsy.selectors.silences import silences_list

from .access import dashboard_view
from .context import page_context

ENDED_SHOWN = 20  # the last ended silences, for the hand-over: what was silenced during the previous shift


@require_GET
@dashboard_view
def checks_page(request):
    return render(request, "dashboard/checks.html", page_context(
        request, checks=checks_overview(), current=list(silences_list(state="current")),
        ended=list(silences_list(state="ended")[:ENDED_SHOWN]), modes=SilenceMode.choices))
