"""Shape rows into what templates show: timeline items, stage groups with tabs, trace entries.

Everything from alert data, tools and LLMs is untrusted: Markdown goes through `render_markdown`
(sanitized HTML); everything else reaches templates as plain text and is escaped there.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Prefetch
from django.utils import timezone
from django.utils.safestring import SafeString

from agents.timeline_events import (
    ErrorMetadata,
    EventMetadata,
    LLMToolCallMetadata,
    MCPToolCallMetadata,
    TextMetadata,
    ToolRef,
    ToolResultMetadata,
    ToolSummaryMetadata,
    read_metadata,
)
from tarsy.models import (
    AgentExecution,
    AlertSession,
    LLMInteraction,
    MCPInteraction,
    SessionStatus,
    Stage,
    StageKind,
    TimelineEvent,
)
from tarsy.selectors.conversations import llm_conversations
from tarsy.services.pseudonyms import pseudonyms_load

from .citations import evidence_in, link_answer, memories_in
from .markdown import pretty_data, render_markdown

LABELS = {
    "llm_thinking": "Thinking", "llm_response": "Response", "llm_tool_call": "Tool call",
    "mcp_tool_call": "Tool", "mcp_tool_summary": "Summarized result", "tool_result": "Result for the model",
    "error": "Error", "user_question": "Question", "executive_summary": "Executive summary",
    "final_analysis": "Final analysis", "code_execution": "Code execution",
    "google_search_result": "Google search", "url_context_result": "URL context",
    "alert_resolved": "Alert resolved",
    "related_alerts": "Related alerts",
    "budget_reached": "Budget reached",
    "memory.recalled": "Memories recalled",
    "memory.reflected": "Memory reflection",
    "action": "Action",
}
MARKDOWN_TYPES = {"llm_thinking", "llm_response", "mcp_tool_summary", "user_question", "executive_summary",
                  "final_analysis", "google_search_result", "url_context_result"}
COLLAPSED_TYPES = {"tool_result", "mcp_tool_call", "llm_tool_call", "related_alerts", "memory.recalled",
                   "memory.reflected"}


def duration_text(ms: Any) -> str:
    try:
        ms = int(ms)
    except (TypeError, ValueError):
        return ""
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes} min {seconds} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


@dataclass
class TimelineItem:
    """One timeline event as the page shows it."""

    id: int
    event_type: str
    status: str
    label: str
    streaming: bool
    text: str = ""  # plain text (escaped by the template): streaming content, errors, pretty tool output
    html: SafeString = SafeString("")  # sanitized Markdown
    tool: str = ""
    arguments: str = ""
    duration: str = ""
    is_error: bool = False
    summarized: bool = False
    source: str = ""
    fallback_provider: str = ""  # the provider that answered instead of the configured one
    collapsed: bool = False
    stage_id: int | None = None
    execution_id: str = ""
    evidence_id: str = ""  # a tool result's E<n>, what citations link to
    hidden: bool = False  # kept in the page (live updates find it) but not drawn: another event shows the same


def _apply_metadata(item: TimelineItem, meta: EventMetadata) -> None:
    """What the event's typed metadata adds to its view (tool, arguments, outcome, source)."""
    if isinstance(meta, ToolRef | ErrorMetadata):
        item.tool = meta.qualified_name
    if isinstance(meta, LLMToolCallMetadata | MCPToolCallMetadata) and meta.arguments is not None:
        item.arguments = pretty_data(meta.arguments)
    if isinstance(meta, MCPToolCallMetadata) and meta.duration_ms is not None:
        item.duration = duration_text(meta.duration_ms)
    if isinstance(meta, MCPToolCallMetadata | ToolResultMetadata):
        item.is_error = item.is_error or bool(meta.is_error)
    if isinstance(meta, ToolResultMetadata):
        item.evidence_id = meta.evidence_id or ""
    item.summarized = isinstance(meta, ToolSummaryMetadata) or (isinstance(meta, ToolResultMetadata)
                                                                and bool(meta.summarized))
    if isinstance(meta, TextMetadata | LLMToolCallMetadata | ErrorMetadata):
        item.source = meta.source or ""
    if isinstance(meta, TextMetadata | LLMToolCallMetadata):
        item.fallback_provider = meta.fallback_provider or ""


def timeline_item(event: TimelineEvent) -> TimelineItem:
    streaming = event.status == "streaming"
    item = TimelineItem(
        id=event.id, event_type=event.event_type, status=event.status, streaming=streaming,
        label=LABELS.get(event.event_type, event.event_type.replace("_", " ").capitalize()),
        is_error=event.event_type == "error" or event.status == "failed",
        collapsed=event.event_type in COLLAPSED_TYPES, stage_id=event.stage_id,
        execution_id=str(event.execution_id or ""),
    )
    _apply_metadata(item, read_metadata(event.event_type, event.metadata))
    if event.event_type == "llm_thinking" and item.source == "react":
        item.label = "Thought"
    if event.event_type == "final_analysis" and event.stage is not None and event.stage.kind == StageKind.CHAT:
        item.label = "Answer"
    if item.fallback_provider:
        item.label = f"{item.label} (fallback provider {item.fallback_provider})"
    if streaming or event.event_type not in MARKDOWN_TYPES:
        item.text = event.content if streaming else pretty_data(event.content)
    else:
        item.html = render_markdown(event.content)
    if event.event_type == "llm_tool_call":  # its content is the arguments as the model wrote them
        item.arguments, item.text = item.arguments or item.text, ""
        # Once the model has chosen, the call itself (mcp_tool_call: arguments, duration) and its result
        # (tool_result, with its evidence id) show it: drawn three times otherwise.
        item.hidden = not streaming
    if event.event_type == "mcp_tool_call" and not item.is_error:
        item.text = ""  # the result is the tool_result's, shown once with its evidence id
    return item


def event_item(event: TimelineEvent) -> TimelineItem:
    """One event rendered on its own (completed while the page was open): an answer's citations are checked
    against the session's tool results."""
    item = timeline_item(event)
    if event.event_type == "final_analysis" and item.html:
        sources = list(TimelineEvent.objects.filter(session_id=event.session_id,
                                                    event_type__in=["tool_result", "memory.recalled"]))
        item.html = link_answer(item.html, event.content, evidence_in(sources), event.session.alert_data,
                                memories_in(sources))
    return item


@dataclass
class ExecutionView:
    execution: AgentExecution
    items: list[TimelineItem] = field(default_factory=list)
    is_synthesis: bool = False
    children: list[ExecutionView] = field(default_factory=list)  # the sub-agents it dispatched

    @property
    def dom_id(self) -> str:
        return f"exec-{self.execution.id}"

    @property
    def duration(self) -> str:
        """How long it ran (so far, while it runs); empty before it started."""
        started, ended = self.execution.started_at, self.execution.completed_at
        if started is None:
            return ""
        return duration_text(((ended or timezone.now()) - started).total_seconds() * 1000)


@dataclass
class StageView:
    stage: Stage
    executions: list[ExecutionView] = field(default_factory=list)
    stage_items: list[TimelineItem] = field(default_factory=list)  # events not tied to an execution


@dataclass
class StageGroup:
    """A chain stage plus the synthesis stage that follows it: shown as one block with tabs."""

    stages: list[StageView]

    @property
    def id(self) -> int:
        return self.stages[0].stage.id

    @property
    def main(self) -> StageView:
        return self.stages[0]

    @property
    def tabs(self) -> list[ExecutionView]:
        """One tab per stage agent (and synthesis); sub-agents are shown in their orchestrator's tree."""
        return [e for s in self.stages for e in s.executions if e.execution.parent_execution_id is None]

    @property
    def all_executions(self) -> list[ExecutionView]:
        return [e for s in self.stages for e in s.executions]

    @property
    def selected(self) -> ExecutionView | None:
        tabs = self.tabs
        return tabs[-1] if tabs and tabs[-1].is_synthesis else (tabs[0] if tabs else None)

    @property
    def total_tokens(self) -> int:
        return sum(e.execution.total_tokens for e in self.all_executions)

    @property
    def cost_usd(self) -> Decimal:
        return sum((e.execution.cost_usd for e in self.all_executions), Decimal(0))

    @property
    def unpriced_calls(self) -> int:
        return sum(e.execution.unpriced_calls for e in self.all_executions)

    @property
    def stage_ids(self) -> str:
        return " ".join(str(s.stage.id) for s in self.stages)


def _stage_views(session: AlertSession, events: list[TimelineEvent], stages: list[Stage]) -> list[StageView]:
    by_execution: dict[str, list[TimelineItem]] = defaultdict(list)
    by_stage: dict[int, list[TimelineItem]] = defaultdict(list)
    evidence, recalled = evidence_in(events), memories_in(events)
    for event in events:
        item = timeline_item(event)
        if event.event_type == "final_analysis" and item.html:
            item.html = link_answer(item.html, event.content, evidence, session.alert_data, recalled)
        if event.execution_id:
            by_execution[str(event.execution_id)].append(item)
        elif event.stage_id:
            by_stage[event.stage_id].append(item)
    views = []
    for stage in stages:
        execs = [ExecutionView(e, by_execution.get(str(e.id), []), stage.kind == StageKind.SYNTHESIS)
                 for e in stage.executions.all()]
        views.append(StageView(stage, _as_tree(execs), by_stage.get(stage.id, [])))
    return views


def _as_tree(execs: list[ExecutionView]) -> list[ExecutionView]:
    """Each sub-agent under the execution that dispatched it (in dispatch order); the flat list is kept."""
    by_id = {str(e.execution.id): e for e in execs}
    for view in sorted(execs, key=lambda e: (e.execution.created_at, e.execution.agent_index)):
        parent = by_id.get(str(view.execution.parent_execution_id or ""))
        if parent is not None:
            parent.children.append(view)
    return execs


def group_stages(views: list[StageView]) -> list[StageGroup]:
    groups: list[StageGroup] = []
    for view in views:
        if view.stage.kind == StageKind.SYNTHESIS and groups and groups[-1].main.stage.kind != StageKind.CHAT:
            groups[-1].stages.append(view)
        else:
            groups.append(StageGroup([view]))
    return groups


def session_stage_groups(session: AlertSession, stage_ids: list[int] | None = None) -> dict[str, Any]:
    """Investigation groups, chat groups and session-level items (events tied to no stage)."""
    stages = list(Stage.objects.filter(session=session).prefetch_related("executions").order_by("index"))
    events = list(TimelineEvent.objects.filter(session=session).select_related("stage").order_by("created_at", "id"))
    views = _stage_views(session, events, stages)
    investigation = group_stages([v for v in views if v.stage.kind != StageKind.CHAT])
    chat = [StageGroup([v]) for v in views if v.stage.kind == StageKind.CHAT]
    loose = [timeline_item(e) for e in events if not e.stage_id and not e.execution_id
             and e.event_type not in ("executive_summary",)]
    return {"groups": investigation, "chat_groups": chat, "session_items": loose}


def group_for_stage(session: AlertSession, stage_id: int) -> tuple[StageGroup | None, bool]:
    """The group holding `stage_id`, and whether it is a chat group."""
    data = session_stage_groups(session)
    for group in data["groups"]:
        if any(s.stage.id == stage_id for s in group.stages):
            return group, False
    for group in data["chat_groups"]:
        if group.id == stage_id:
            return group, True
    return None, False


# ---- active panel ----------------------------------------------------------------------------------------------

PHASES = {
    "llm_thinking": "thinking", "llm_response": "writing", "llm_tool_call": "choosing a tool",
    "mcp_tool_call": "calling a tool", "mcp_tool_summary": "summarizing a tool result",
    "tool_result": "reading a tool result", "final_analysis": "writing the analysis",
    "executive_summary": "writing the executive summary", "error": "recovering from an error",
}


def _phase(session: AlertSession) -> str:
    """What the session is doing now, from its latest timeline event."""
    if session.status == SessionStatus.CANCELLING:
        return "cancelling"
    event = TimelineEvent.objects.filter(session=session).order_by("-created_at", "-id").first()
    if event is None:
        return "starting"
    metadata = read_metadata(event.event_type, event.metadata)
    if isinstance(metadata, MCPToolCallMetadata) and metadata.qualified_name:
        return f"calling {metadata.qualified_name}"
    return PHASES.get(event.event_type, event.event_type.replace("_", " "))


@dataclass(frozen=True)
class RunningCard:
    """A running session's card: the session with its current stage and phase."""

    session: AlertSession
    stage_name: str
    phase: str


def active_panels(active: dict[str, list[AlertSession]]) -> dict[str, list[Any]]:
    """The shared active/queued lists, each running session as a card with its current stage and phase."""
    cards = []
    for session in active["active"]:
        stage = Stage.objects.filter(session=session).exclude(kind=StageKind.CHAT).order_by("-index").first()
        cards.append(RunningCard(session=session, stage_name=stage.name if stage else "", phase=_phase(session)))
    return {**active, "active": cards}


# ---- trace view ------------------------------------------------------------------------------------------------


@dataclass
class TraceEntry:
    kind: str  # "llm" | "mcp"
    row: Any
    created_at: Any
    messages: list[dict[str, Any]] = field(default_factory=list)
    arguments: str = ""
    result: str = ""
    duration: str = ""


def _message_view(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls") or []
    return {
        "role": message.get("role", "?"), "content": message.get("content") or "",
        "tool_calls": [{"id": c.get("id", ""), "name": c.get("name", ""), "arguments": pretty_data(c.get("arguments"))}
                       for c in calls if isinstance(c, dict)],
        "tool_call_id": message.get("tool_call_id") or "", "tool_name": message.get("tool_name") or "",
    }


def _llm_entry(row: LLMInteraction) -> TraceEntry:
    conversation = row.conversation if isinstance(row.conversation, list) else []
    return TraceEntry("llm", row, row.created_at, messages=[_message_view(m) for m in conversation
                                                            if isinstance(m, dict)],
                      duration=duration_text(row.duration_ms))


def _mcp_entry(row: MCPInteraction) -> TraceEntry:
    return TraceEntry("mcp", row, row.created_at, arguments=pretty_data(row.arguments), result=pretty_data(row.result),
                      duration=duration_text(row.duration_ms))


@dataclass
class TraceExecution:
    execution: AgentExecution | None
    entries: list[TraceEntry]

    @property
    def llm_count(self) -> int:
        return sum(1 for e in self.entries if e.kind == "llm")

    @property
    def mcp_count(self) -> int:
        return sum(1 for e in self.entries if e.kind == "mcp")


def session_trace(session: AlertSession) -> dict[str, Any]:
    """Per stage → execution: LLM and MCP interactions in time order; session-level calls apart."""
    entries: dict[str, list[TraceEntry]] = defaultdict(list)
    for llm in llm_conversations(list(LLMInteraction.objects.filter(session=session).order_by("created_at", "id"))):
        entries[str(llm.execution_id or "")].append(_llm_entry(llm))
    for mcp in MCPInteraction.objects.filter(session=session).order_by("created_at", "id"):
        entries[str(mcp.execution_id or "")].append(_mcp_entry(mcp))
    for rows in entries.values():
        rows.sort(key=lambda e: e.created_at)
    stages = []
    executions = Prefetch("executions", queryset=AgentExecution.objects.select_related("parent_execution"))
    for stage in Stage.objects.filter(session=session).prefetch_related(executions).order_by("index"):
        stages.append({"stage": stage, "executions": [TraceExecution(e, entries.get(str(e.id), []))
                                                      for e in stage.executions.all()]})
    return {"stages": stages, "session_level": TraceExecution(None, entries.get("", [])),
            "pseudonyms": sorted(pseudonyms_load(str(session.id)), key=lambda p: (p.kind, p.number))}
