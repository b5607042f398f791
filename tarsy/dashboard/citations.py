"""Citations on the session page: `[E7]` in the rendered analysis becomes a link to the evidence event.

Works on the sanitized HTML of the analysis (`render_markdown`), in text between tags only, from the stored
verification (`tarsy.services.citations`): a valid tool-result id links to its timeline event (the page's
script scrolls to it and highlights it), a valid alert field to the original alert, an invalid id is marked
as such with the reason. Before the verification exists (the session is still running) the text is left alone.
An agent's own answer on the timeline (each parallel agent's, the synthesis's, a chat answer) is checked the
same way when the page is drawn, against the session's tool results shown with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import unescape
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from agents.citations import (
    CITATION,
    NO_ALERT_FIELD,
    NOT_IN_SESSION,
    NOT_RECALLED,
    Evidence,
    cited_ids,
    verify_citations,
)
from agents.timeline_events import TimelineEventType, ToolResultMetadata, read_metadata
from tarsy.models import TimelineEvent

_TAG = re.compile(r"(<[^>]*>)")
REASONS = {
    NOT_IN_SESSION: "not a tool result of this session",
    NO_ALERT_FIELD: "the alert has no such field",
    NOT_RECALLED: "no such memory was recalled for this session",
}


@dataclass
class CitationsView:
    """The verification as the page shows it: per-id lookups for the links, the lists for the summary."""

    valid: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[dict[str, Any]] = field(default_factory=list)
    uncited: list[dict[str, Any]] = field(default_factory=list)
    uncited_findings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        return {entry["id"]: {**entry, "ok": True} for entry in self.valid} | {
            entry["id"]: {**entry, "ok": False} for entry in self.invalid}


def citations_view(stored: dict[str, Any] | None) -> CitationsView | None:
    if not isinstance(stored, dict):
        return None
    invalid = [{**entry, "why": REASONS.get(entry.get("reason", ""), entry.get("reason", ""))}
               for entry in stored.get("invalid") or []]
    return CitationsView(valid=list(stored.get("valid") or []), invalid=invalid,
                         uncited=list(stored.get("uncited") or []),
                         uncited_findings=list(stored.get("uncited_findings") or []))


def _link(identifier: str, entry: dict[str, Any] | None) -> str:
    text = escape(identifier)
    if entry is None:
        return text
    if not entry["ok"]:
        why = escape(entry.get("why") or entry.get("reason", ""))
        return f'<span class="cite cite-invalid" title="Invalid citation: {why}">{text}</span>'
    if entry.get("kind") == "memory":
        return f'<span class="cite cite-memory" title="Memory recalled from past investigations">{text}</span>'
    if entry.get("kind") == "alert_field":
        return f'<a class="cite cite-alert" href="#alert-data" title="Field of the alert">{text}</a>'
    tool = escape(entry.get("tool", ""))
    event_id = int(entry["event_id"])
    return (f'<a class="cite" href="#event-{event_id}" data-cite-event="{event_id}" '
            f'title="Evidence {text}: result of {tool}">{text}</a>')


def _linked_group(match: re.Match[str], by_id: dict[str, dict[str, Any]]) -> str:
    """One bracketed group of the (escaped) HTML text; ids are compared and re-escaped as plain text."""
    ids = [unescape(identifier) for identifier in cited_ids(match.group(0))]
    links = [_link(identifier, by_id.get(identifier)) for identifier in ids]
    return "[" + ", ".join(links) + "]"


def link_citations(html: SafeString, view: CitationsView | None) -> SafeString:
    """The analysis's HTML with its citations turned into links (valid) or marks (invalid)."""
    if view is None or not html:
        return html
    by_id = view.by_id
    parts = _TAG.split(str(html))
    for index, part in enumerate(parts):
        if part and not part.startswith("<"):
            parts[index] = CITATION.sub(lambda match: _linked_group(match, by_id), part)
    return mark_safe("".join(parts))  # noqa: S308 - sanitized HTML; every inserted value is escaped above


def evidence_in(events: list[TimelineEvent]) -> list[Evidence]:
    """The tool results among already loaded timeline events, for checking answers shown with them."""
    evidence = []
    for event in events:
        if event.event_type != TimelineEventType.TOOL_RESULT:
            continue
        meta = read_metadata(event.event_type, event.metadata)
        if isinstance(meta, ToolResultMetadata) and meta.evidence_id:
            evidence.append(Evidence(id=meta.evidence_id, event_id=event.id, tool=meta.qualified_name,
                                     is_error=bool(meta.is_error)))
    return evidence


def memories_in(events: list[TimelineEvent]) -> set[str]:
    """The memory ids ("M<n>") recalled among already loaded timeline events."""
    recalled: set[str] = set()
    for event in events:
        if event.event_type == TimelineEventType.MEMORY_RECALLED:
            recalled.update(f"M{i}" for i in (event.metadata or {}).get("memory_ids", []) if isinstance(i, int))
    return recalled


def link_answer(html: SafeString, text: str, evidence: list[Evidence], alert_data: str,
                recalled: set[str] | None = None) -> SafeString:
    """An answer on the timeline with its citations checked against the session's evidence (and recalled
    memories) and linked."""
    if not CITATION.search(text or ""):
        return html
    return link_citations(html, citations_view(verify_citations(text, evidence, alert_data, recalled or set())))
