"""TARSy's data model (DESIGN §3)."""

from .actions import (
    ACTION_MAX_COMMENT_CHARS,
    DECIDED_STATUSES,
    RATE_LIMITED_STATUSES,
    ActionOutcome,
    ActionProposal,
    DryRunStatus,
    ProposalStatus,
)
from .events import Chat, ChatUserMessage, Event
from .memory import Memory, MemoryChange, MemoryChangeAction, MemoryKind, MemoryState
from .outbox import OutboxTask
from .privacy import Pseudonym
from .quality import FAILURE_TAGS, SUPPORT_BANDS, Rating, ScoreStatus, SessionReview, SessionScore, Support
from .records import (
    CallStatus,
    InteractionText,
    InteractionType,
    LLMInteraction,
    MCPInteraction,
    Message,
    MessageRole,
    TimelineEvent,
    TimelineEventType,
    TimelineStatus,
)
from .sessions import (
    ACTIVE_SESSION_STATUSES,
    TERMINAL_EXEC_STATUSES,
    TERMINAL_SESSION_STATUSES,
    AgentExecution,
    AlertOccurrence,
    AlertSession,
    CheckResult,
    ExecStatus,
    OccurrenceKind,
    ParallelType,
    SessionCounters,
    SessionStatus,
    Severity,
    Stage,
    StageKind,
    StageType,
)
from .silences import SILENCE_MAX_MATCHERS, SILENCE_MAX_REASON_CHARS, Silence, SilenceMode
from .slack import SlackPost, SlackPostKind, SlackThread
from .tokens import APIToken
from .triage import (
    TRIAGE_ACTIONS,
    TRIAGE_BULK_ACTIONS,
    TRIAGE_MAX_BULK,
    TRIAGE_MAX_NOTE_CHARS,
    Resolution,
    TriageActivity,
    TriageStatus,
)

__all__ = [
    "Pseudonym",
    "ACTION_MAX_COMMENT_CHARS", "DECIDED_STATUSES", "RATE_LIMITED_STATUSES", "ActionOutcome", "ActionProposal",
    "DryRunStatus",
    "ProposalStatus",
    "FAILURE_TAGS", "SUPPORT_BANDS",
    "ACTIVE_SESSION_STATUSES", "TERMINAL_EXEC_STATUSES", "TERMINAL_SESSION_STATUSES", "AgentExecution", "APIToken",
    "AlertOccurrence", "AlertSession", "Chat", "CheckResult", "ChatUserMessage", "Event", "ExecStatus",
    "CallStatus", "InteractionText",
    "InteractionType",
    "LLMInteraction", "MCPInteraction",
    "Memory", "MemoryChange", "MemoryChangeAction", "MemoryKind", "MemoryState",
    "Message", "MessageRole", "OccurrenceKind", "OutboxTask", "ParallelType",
    "Rating", "Resolution",
    "ScoreStatus", "SessionCounters", "SessionReview", "SessionScore", "SessionStatus", "Severity", "SlackPost",
    "SlackPostKind",
    "SILENCE_MAX_MATCHERS", "SILENCE_MAX_REASON_CHARS", "Silence", "SilenceMode",
    "SlackThread", "Stage", "StageKind", "StageType", "Support",
    "TimelineEvent", "TimelineEventType", "TimelineStatus", "TriageActivity", "TriageStatus",
    "TRIAGE_ACTIONS", "TRIAGE_BULK_ACTIONS", "TRIAGE_MAX_BULK", "TRIAGE_MAX_NOTE_CHARS",
]
