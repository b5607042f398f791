"""Timeline event types and the metadata each type carries.

Every writer (controllers, the MCP executor, the pipeline, through `tarsy.services.timeline`) builds metadata
with `event_metadata`: keys a type does not define, or values of the wrong type, fail where they are written
instead of showing up as blanks in the dashboard or the next stage's prompt. Every reader (dashboard, API,
stage-context formatting) gets the typed model from `read_metadata`, which never fails: rows written before the
names were fixed (`server`/`tool`, or `tool_name` as "server.tool") are normalised, unknown keys dropped.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, model_validator

STORED = {"stored": True}  # validation context of a row read back: lenient, see `read_metadata`


class TimelineEventType(StrEnum):
    LLM_THINKING = "llm_thinking"
    LLM_RESPONSE = "llm_response"
    LLM_TOOL_CALL = "llm_tool_call"
    MCP_TOOL_CALL = "mcp_tool_call"
    MCP_TOOL_SUMMARY = "mcp_tool_summary"
    TOOL_RESULT = "tool_result"
    ERROR = "error"
    USER_QUESTION = "user_question"
    EXECUTIVE_SUMMARY = "executive_summary"
    FINAL_ANALYSIS = "final_analysis"
    CODE_EXECUTION = "code_execution"
    GOOGLE_SEARCH_RESULT = "google_search_result"
    URL_CONTEXT_RESULT = "url_context_result"
    ALERT_RESOLVED = "alert_resolved"
    RELATED_ALERTS = "related_alerts"
    BUDGET_REACHED = "budget_reached"
    MEMORY_RECALLED = "memory.recalled"
    MEMORY_REFLECTED = "memory.reflected"
    ACTION = "action"


TOOL_CALL_EVENTS = (TimelineEventType.LLM_TOOL_CALL, TimelineEventType.MCP_TOOL_CALL)
TOOL_RESULT_EVENTS = (TimelineEventType.TOOL_RESULT, TimelineEventType.MCP_TOOL_SUMMARY)

TextSource = Literal["native", "react"]  # the model's own reasoning/text, or parsed from a ReAct reply
ErrorSource = Literal["native", "react", "mcp", "summarization", "alert", "dry_run"]


def _stored(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("stored"))


class EventMetadata(BaseModel):
    """Base of every type's metadata: unknown keys are refused when written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _normalise_stored(cls, data: Any, info: ValidationInfo) -> Any:
        if not _stored(info) or not isinstance(data, dict):
            return data
        data = _renamed_tool_keys(data)
        return {key: value for key, value in data.items() if key in cls.model_fields}

    def dump(self) -> dict[str, Any]:
        """As stored: JSON types, unset fields left out."""
        return self.model_dump(mode="json", exclude_none=True)


def qualified_name(server: str | None, tool: str | None) -> str:
    """`server.tool` as the model calls it; whichever half is known for an incomplete row."""
    return ".".join(part for part in (server, tool) if part)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _renamed_tool_keys(data: dict[str, Any]) -> dict[str, Any]:
    """Older rows: the executor wrote `server`/`tool`; the controllers `tool_name` as "server.tool"."""
    data = dict(data)
    server = _text(data.get("server_name")) or _text(data.pop("server", None))
    bare = _text(data.pop("tool", None))
    tool = _text(data.get("tool_name"))
    if server and tool.startswith(f"{server}."):
        tool = tool[len(server) + 1:]
    elif not server and "." in tool:
        server, tool = tool.split(".", 1)
    tool = tool or bare or ""
    if server:
        data["server_name"] = server
    if tool:
        data["tool_name"] = tool
    return data


class ToolRef(EventMetadata):
    """Which MCP tool: `tool_name` is the tool's own name on `server_name` (the pair MCPInteraction stores).

    Both are required when written, though either may be empty: the model may ask for a name that is no tool."""

    server_name: str = ""
    tool_name: str = ""

    @model_validator(mode="after")
    def _named(self, info: ValidationInfo) -> ToolRef:
        if not _stored(info) and not {"server_name", "tool_name"} <= self.model_fields_set:
            raise ValueError(f"{type(self).__name__} needs server_name and tool_name")
        return self

    @property
    def qualified_name(self) -> str:
        return qualified_name(self.server_name, self.tool_name)


class TextMetadata(EventMetadata):
    """llm_thinking, llm_response, final_analysis: where the text came from; `fallback_provider` names the provider
    that answered when it is not the one configured (a fallback took over)."""

    source: TextSource | None = None
    fallback_provider: str | None = None


class LLMToolCallMetadata(ToolRef):
    """The model asked for a tool. `arguments` as the model wrote them, masked (a string when not JSON)."""

    arguments: Any = None
    tool_call_id: str | None = None
    source: TextSource | None = None
    fallback_provider: str | None = None  # the provider that asked for the call, when a fallback took over


class MCPToolCallMetadata(ToolRef):
    """The call as executed; its outcome is set when the event completes."""

    arguments: Any = None
    is_error: bool | None = None
    duration_ms: int | None = None
    raw_size: int | None = None
    error_kind: str | None = None


class ToolResultMetadata(ToolRef):
    """What the LLM was given back for one call; `evidence_id` (E<n>, unique in the session) is how an analysis
    cites it (see agents.citations)."""

    is_error: bool | None = None
    summarized: bool | None = None
    tool_call_id: str | None = None
    evidence_id: str | None = None
    suspected_injection: bool | None = None  # reads like instructions to the model (agents.prompts.injection)


class ToolSummaryMetadata(ToolRef):
    original_tokens: int | None = None


class ErrorMetadata(EventMetadata):
    """What failed; the flags say which of the known failures it was."""

    source: ErrorSource | None = None
    server_name: str | None = None
    tool_name: str | None = None
    reason: str | None = None  # ReAct: why the reply could not be used (malformed, unknown_tool)
    code: str | None = None  # provider error code
    retryable: bool | None = None
    timeout: bool | None = None
    max_iterations: bool | None = None
    internal: bool | None = None
    session_timeout: bool | None = None
    executive_summary_error: bool | None = None
    runbook_url: str | None = None
    warning: bool | None = None
    provider: str | None = None  # the LLM provider that failed
    fallback_provider: str | None = None  # the provider the call continued on
    suspected_injection: bool | None = None  # the alert reads like instructions to the model

    @property
    def qualified_name(self) -> str:
        return qualified_name(self.server_name, self.tool_name)


class UserQuestionMetadata(EventMetadata):
    author: str = ""
    message_id: str | None = None


class CodeExecutionMetadata(EventMetadata):
    code: str = ""
    result: str = ""
    outcome: str = ""


class GroundingSourceMetadata(EventMetadata):
    uri: str
    title: str = ""


class GroundingMetadata(EventMetadata):
    """google_search_result / url_context_result."""

    queries: list[str] = []
    sources: list[GroundingSourceMetadata] = []


class AlertResolvedMetadata(EventMetadata):
    """The alert's source reported it resolved: which source and alert, and the source's timestamp for it."""

    source: str
    fingerprint: str = ""
    resolved_at: str = ""
    action: Literal["cancelled", "annotated"] = "annotated"
    related: bool = False  # a related alert of the session's group resolved, not the session's own


class RelatedAlertsMetadata(EventMetadata):
    """related_alerts: alerts of the session's group added to the investigation's context."""

    occurrence_ids: list[int] = []
    count: int = 0
    suspected_injection: bool | None = None  # a related alert reads like instructions (agents.prompts.fence)


class BudgetMetadata(EventMetadata):
    """Which limit of the investigation's budget was reached, and how much had been used."""

    kind: Literal["tokens", "cost_usd", "tool_calls", "wall_time"] | None = None
    limit: float | None = None
    used: float | None = None


class MemoryRecalledMetadata(EventMetadata):
    """memory.recalled: the memories injected into the prompt, best first, with their fused scores; `mode` says
    whether embeddings took part (hybrid) or keyword ranking alone chose them."""

    memory_ids: list[int] = []
    scores: list[float] = []
    mode: Literal["hybrid", "keyword"] = "keyword"
    suspected_injection: bool | None = None  # a recalled memory's text reads like instructions (agents.prompts.fence)
    flagged_memory_ids: list[int] = []


class MemoryDropped(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    reason: str


class MemoryReflectedMetadata(EventMetadata):
    """memory.reflected: what a reflection on the session did — memories learned (active), held for review,
    found again (confirmed, or not counted and why), released by an accurate review, and candidates dropped with
    the reason; `skipped` says why nothing was learned."""

    learned_ids: list[int] = []
    held_ids: list[int] = []
    confirmed_ids: list[int] = []
    released_ids: list[int] = []
    dropped: list[MemoryDropped] = []
    not_counted: list[MemoryDropped] = []
    skipped: str | None = None
    suspected_injection: bool | None = None


class ActionMetadata(ToolRef):
    """action: one transition of an action proposal (proposed, approved, rejected, expired, withdrawn, executed),
    who made it, and once executed its outcome (verified, not_verified, failed)."""

    proposal_id: str = ""
    transition: str = ""
    actor: str | None = None
    outcome: str | None = None


METADATA_MODELS: dict[TimelineEventType, type[EventMetadata]] = {
    TimelineEventType.LLM_THINKING: TextMetadata,
    TimelineEventType.LLM_RESPONSE: TextMetadata,
    TimelineEventType.FINAL_ANALYSIS: TextMetadata,
    TimelineEventType.LLM_TOOL_CALL: LLMToolCallMetadata,
    TimelineEventType.MCP_TOOL_CALL: MCPToolCallMetadata,
    TimelineEventType.TOOL_RESULT: ToolResultMetadata,
    TimelineEventType.MCP_TOOL_SUMMARY: ToolSummaryMetadata,
    TimelineEventType.ERROR: ErrorMetadata,
    TimelineEventType.USER_QUESTION: UserQuestionMetadata,
    TimelineEventType.EXECUTIVE_SUMMARY: EventMetadata,
    TimelineEventType.CODE_EXECUTION: CodeExecutionMetadata,
    TimelineEventType.GOOGLE_SEARCH_RESULT: GroundingMetadata,
    TimelineEventType.URL_CONTEXT_RESULT: GroundingMetadata,
    TimelineEventType.ALERT_RESOLVED: AlertResolvedMetadata,
    TimelineEventType.RELATED_ALERTS: RelatedAlertsMetadata,
    TimelineEventType.BUDGET_REACHED: BudgetMetadata,
    TimelineEventType.MEMORY_RECALLED: MemoryRecalledMetadata,
    TimelineEventType.MEMORY_REFLECTED: MemoryReflectedMetadata,
    TimelineEventType.ACTION: ActionMetadata,
}


def event_metadata(event_type: str, **fields: Any) -> dict[str, Any]:
    """The one way metadata is written: checked against the type's model (ValidationError on a wrong or
    missing key), stored without unset fields."""
    return METADATA_MODELS[TimelineEventType(event_type)].model_validate(fields).dump()


def read_metadata(event_type: str, stored: dict[str, Any] | None) -> EventMetadata:
    """The typed metadata of a stored row. Never raises: a value of the wrong type is dropped, not shown."""
    try:
        model = METADATA_MODELS[TimelineEventType(event_type)]
    except ValueError:
        model = EventMetadata
    data = dict(stored) if isinstance(stored, dict) else {}
    for _ in range(2):
        try:
            return model.model_validate(data, context=STORED)
        except ValidationError as exc:
            bad = {error["loc"][0] for error in exc.errors() if error["loc"]}
            data = {key: value for key, value in data.items() if key not in bad}
    return model.model_validate({}, context=STORED)
