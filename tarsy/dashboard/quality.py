"""The quality panel of a session page and the quality-over-time page (charts drawn in tarsy.dashboard.charts)."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_GET

from tarsy.models import FAILURE_TAGS, SUPPORT_BANDS, AlertSession, Rating, SessionStatus
from tarsy.selectors.filters import CREATED_WITHIN
from tarsy.selectors.quality import DEFAULT_PERIOD, PERIOD_PARAMS, overview_filter, quality_overview, related_or_none
from tarsy.selectors.sessions import session_filter_options
from tarsy.services.quality import scoring_enabled

from . import charts
from .access import dashboard_view
from .context import page_context

BAND_CSS = {"supported": "band-supported", "partly": "band-partly", "unsupported": "band-unsupported"}
RATING_CSS = {Rating.ACCURATE: "band-supported", Rating.PARTIALLY_ACCURATE: "band-partly",
              Rating.INACCURATE: "band-unsupported"}
RATING_LABELS = dict(Rating.choices)


def session_quality(session: AlertSession) -> dict[str, Any]:
    """What the session page's quality panel shows and offers."""
    score = related_or_none(session, "score")
    enabled = scoring_enabled()
    return {
        "score": score, "review": related_or_none(session, "review"),
        "tag_meanings": [(tag, FAILURE_TAGS.get(tag, "")) for tag in (score.tags if score else [])],
        "band_css": BAND_CSS.get(score.support, "") if score else "",
        "adjustments": (score.signals or {}).get("adjustments", []) if score else [],
        "scoring_enabled": enabled, "rescorable": enabled and session.status == SessionStatus.COMPLETED,
        "reviewable": session.is_terminal, "ratings": Rating.choices,
    }


def _band_segments(group: dict[str, Any]) -> list[charts.Segment]:
    unscored = group["sessions"] - group["scored"]
    return [*(charts.Segment(band, group["bands"][band], BAND_CSS[band]) for band in SUPPORT_BANDS),
            charts.Segment("not scored", unscored, "seg-none")]


def _review_segments(group: dict[str, Any]) -> list[charts.Segment]:
    unreviewed = group["sessions"] - sum(group["reviews"].values())
    return [*(charts.Segment(RATING_LABELS[r], group["reviews"][r], RATING_CSS[r]) for r in Rating),
            charts.Segment("not reviewed", unreviewed, "seg-none")]


def _dimension(title: str, groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "title": title,
        "rows": [{**g, "review_counts": [g["reviews"][r] for r in Rating.values]} for g in groups],
        "scores_svg": charts.stacked_bars([(g["name"], _band_segments(g)) for g in groups],
                                          title=f"Score bands by {title.lower()}"),
        "reviews_svg": charts.stacked_bars([(g["name"], _review_segments(g)) for g in groups],
                                           title=f"Review ratings by {title.lower()}"),
    }


def _histogram_classes(bins: int) -> list[str]:
    from tarsy.pipeline.scoring.rubric import support_for

    width = 100 // bins
    return [BAND_CSS[support_for(i * width + width // 2)] for i in range(bins)]


@require_GET
@dashboard_view
def quality_page(request):
    """Score and review distributions per chain, agent and provider over a period, and score–rating agreement."""
    sessions = overview_filter(request.GET)
    notes = []
    if not sessions.is_valid():
        notes = [f"The {name} filter was ignored: {' '.join(errors)}" for name, errors in sessions.errors.items()]
        sessions = overview_filter(QueryDict(""))
    data = quality_overview(sessions.qs)
    overall = data["overall"]
    agreement = data["agreement"]
    matrix = [{"band": band, "css": BAND_CSS[band], "cells": [agreement["matrix"][band][r] for r in Rating.values]}
              for band in SUPPORT_BANDS]
    period = {name: request.GET.get(name, "") for name in PERIOD_PARAMS}
    if not any(period.values()):
        period["created_within"] = DEFAULT_PERIOD
    context = page_context(
        request, data=data, notes=notes, period=period, created_within=list(CREATED_WITHIN),
        chain_id=request.GET.get("chain_id", ""), options=session_filter_options(),
        histogram_svg=charts.histogram(overall["histogram"], title="Score distribution",
                                       band_classes=_histogram_classes(len(overall["histogram"]))),
        trend_svg=charts.line([(d["name"], d["mean_score"]) for d in data["by_day"]], title="Mean score per day"),
        dimensions=[_dimension("Chain", data["by_chain"]), _dimension("Agent", data["by_agent"]),
                    _dimension("Provider", data["by_provider"])],
        ratings=[(r, RATING_LABELS[r]) for r in Rating.values], matrix=matrix,
        mean_by_rating=[agreement["mean_score_by_rating"][r] for r in Rating.values],
        top_tags=[(tag, FAILURE_TAGS.get(tag, ""), n) for tag, n in list(overall["tags"].items())[:12]],
    )
    return render(request, "dashboard/quality.html", context)
