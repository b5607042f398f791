"""What the built-in `tarsy` MCP server's tools answer (tarsy.mcp_server): past investigations an agent asks
about mid-investigation, as masked snippets that cite memory ids and link to their sessions."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from agents.mcp.masking.boundary import mask_text
from agents.memory.prompt import Recalled, memory_entry
from agents.prompts.fence import untrusted
from tarsy.links import session_url
from tarsy.models import AlertSession, SessionStatus
from tarsy.selectors.filters import search_sessions

from .recall import recall

MAX_TOOL_RESULTS = 5
SNIPPET_CHARS = 600
_AGO = re.compile(r"^\s*(\d+)\s*([dh])\s*$")


class ToolInputError(ValueError):
    """An argument the tool cannot use; the message goes back to the model."""


def recall_past_investigations(query: str) -> str:
    """Memories of any alert type matching the query, best first, each with its id and source session."""
    if not query.strip():
        raise ToolInputError("query is empty: name the service, symptom or resource to recall")
    hits, mode = recall(query=query, alert_type=None, chain_id=None, labels={}, limit=MAX_TOOL_RESULTS)
    if not hits:
        return f"No memory matches {query!r} ({mode} search)."
    lines = [f"{len(hits)} memories ({mode} search); cite one you rely on by its id:"]
    for hit in hits:
        m = hit.memory
        source = f", learned from {session_url(m.session_id)}" if m.session_id else ""
        recalled = Recalled(memory_id=m.id, kind=m.kind, text=m.text, confidence=m.confidence,
                            age_days=0, use_count=m.use_count)
        lines.append(memory_entry(recalled, facts=f"{m.kind}, confidence {m.confidence:.2f}, alert type "
                                                  f"{m.alert_type or 'any'}, confirmed {m.confirmed_at:%Y-%m-%d}"
                                                  f"{source}").text)
    return mask_text("\n\n".join(lines))


def _since(value: str) -> datetime | None:
    if not value.strip():
        return None
    ago = _AGO.match(value)
    if ago:
        amount = int(ago.group(1))
        return timezone.now() - (timedelta(days=amount) if ago.group(2) == "d" else timedelta(hours=amount))
    moment = parse_datetime(value) or (datetime.combine(d, datetime.min.time()) if (d := parse_date(value)) else None)
    if moment is None:
        raise ToolInputError(f"since {value!r}: give an ISO date (2026-11-01), a timestamp, or an age like 7d / 12h")
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)


def search_past_sessions(query: str, alert_type: str = "", since: str = "") -> str:
    """Completed sessions whose alert, analysis, summary or timeline match the query, newest first."""
    if not query.strip():
        raise ToolInputError("query is empty: give a few distinctive words (a service, an error, a resource)")
    rows = AlertSession.objects.filter(status=SessionStatus.COMPLETED)
    if alert_type:
        rows = rows.filter(alert_type=alert_type)
    start = _since(since)
    if start is not None:
        rows = rows.filter(created_at__gte=start)
    found = list(search_sessions(rows, query).select_related("review").order_by("-created_at")[:MAX_TOOL_RESULTS])
    if not found:
        return f"No completed session matches {query!r}."
    parts = []
    for session in found:
        review = getattr(session, "review", None)
        verdict = f"; reviewed {review.rating}" if review else ""
        text = (session.executive_summary or session.final_analysis or "")[:SNIPPET_CHARS]
        when = session.created_at.strftime("%Y-%m-%d %H:%M")
        head = f"Session {session.id} ({session.alert_type}, {when} UTC{verdict}) {session_url(session.id)}."
        parts.append(untrusted(f"Title: {session.title or '-'}\nConclusion: {text}", what="its title and conclusion",
                               preface=head).text)
    return mask_text("\n\n".join(parts))
