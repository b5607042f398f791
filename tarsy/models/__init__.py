"""TARSy's data model (DESIGN §3)."""

from .events import Chat, ChatUserMessage, Event
from .records import (
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
    AlertSession,
    ExecStatus,
    ParallelType,
    SessionStatus,
    Severity,
    Stage,
    StageKind,
)
from .tokens import APIToken

__all__ = [
    "ACTIVE_SESSION_STATUSES", "TERMINAL_EXEC_STATUSES", "TERMINAL_SESSION_STATUSES", "AgentExecution", "APIToken",
    "AlertSession", "Chat", "ChatUserMessage", "Event", "ExecStatus", "InteractionType", "LLMInteraction",
    "MCPInteraction", "Message", "MessageRole", "ParallelType", "SessionStatus", "Severity", "Stage", "StageKind",
    "TimelineEvent", "TimelineEventType", "TimelineStatus",
]
