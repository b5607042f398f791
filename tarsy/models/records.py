"""What an execution writes: timeline events, conversation messages, debug interactions."""

from __future__ import annotations

from django.db import models

from agents.timeline_events import TimelineEventType as EventType

from .sessions import AgentExecution, AlertSession, Stage

# The column's choices, from the one enum the writers (plain Python, no Django) also use.
TimelineEventType = models.TextChoices(  # type: ignore[call-overload]  # the stubs type only the class form
    "TimelineEventType", [(t.name, t.value) for t in EventType])


class TimelineStatus(models.TextChoices):
    STREAMING = "streaming"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"


class TimelineEvent(models.Model):
    """What the user sees. Content grows while `streaming`; `iteration` ties it to the step that wrote it."""

    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="timeline_events")
    stage = models.ForeignKey(Stage, null=True, blank=True, on_delete=models.CASCADE, related_name="timeline_events")
    execution = models.ForeignKey(
        AgentExecution, null=True, blank=True, on_delete=models.CASCADE, related_name="timeline_events"
    )
    iteration = models.IntegerField(default=0)
    sequence_number = models.IntegerField()
    event_type = models.CharField(max_length=40, choices=TimelineEventType.choices)
    status = models.CharField(max_length=20, choices=TimelineStatus.choices, default=TimelineStatus.COMPLETED)
    content = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["execution", "sequence_number"],
                condition=models.Q(execution__isnull=False),
                name="timeline_unique_exec_seq",
            ),
            models.UniqueConstraint(
                fields=["session", "sequence_number"],
                condition=models.Q(execution__isnull=True),
                name="timeline_unique_session_seq",
            ),
        ]
        indexes = [
            models.Index(fields=["session", "created_at", "id"], name="timeline_session_order"),
            models.Index(fields=["execution", "iteration"], name="timeline_exec_iteration"),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence_number} {self.event_type} ({self.status})"


class MessageRole(models.TextChoices):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Message(models.Model):
    """The LLM conversation of one execution, linear and without duplication."""

    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="messages")
    execution = models.ForeignKey(AgentExecution, on_delete=models.CASCADE, related_name="messages")
    iteration = models.IntegerField(default=0)
    sequence_number = models.IntegerField()
    role = models.CharField(max_length=20, choices=MessageRole.choices)
    content = models.TextField(blank=True, default="")
    tool_calls = models.JSONField(default=list, blank=True)
    tool_call_id = models.CharField(max_length=255, blank=True, default="")
    tool_name = models.CharField(max_length=255, blank=True, default="")
    provider_state = models.JSONField(
        null=True, blank=True, help_text="Opaque provider data replayed on the next call (e.g. thought signatures)"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["execution", "sequence_number"]
        constraints = [
            models.UniqueConstraint(fields=["execution", "sequence_number"], name="message_unique_exec_seq")
        ]
        indexes = [models.Index(fields=["execution", "iteration"], name="message_exec_iteration")]

    def __str__(self) -> str:
        return f"#{self.sequence_number} {self.role}"


class InteractionType(models.TextChoices):
    ITERATION = "iteration"
    FORCED_CONCLUSION = "forced_conclusion"
    SYNTHESIS = "synthesis"
    SUMMARIZATION = "summarization"
    EXECUTIVE_SUMMARY = "executive_summary"
    CHAT = "chat"
    SCORING = "scoring"
    MEMORY_REFLECTION = "memory_reflection"


class CallStatus(models.TextChoices):
    """Where an LLM call's row stands: written when the call starts, completed when it ends; a call its process
    never finished (killed, or its attempt was re-run) is closed as interrupted with what it had stored."""

    STARTED = "started"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"


class LLMInteraction(models.Model):
    """One LLM call, with the full structured conversation sent plus the reply (debug view)."""

    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="llm_interactions")
    execution = models.ForeignKey(
        AgentExecution, null=True, blank=True, on_delete=models.CASCADE, related_name="llm_interactions"
    )
    iteration = models.IntegerField(default=0)
    interaction_type = models.CharField(max_length=30, choices=InteractionType.choices)
    provider = models.CharField(max_length=200, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    conversation = models.JSONField(default=list)
    thinking_content = models.TextField(blank=True, default="")
    input_tokens = models.IntegerField(default=0)
    output_tokens = models.IntegerField(default=0)
    thinking_tokens = models.IntegerField(default=0)
    total_tokens = models.IntegerField(default=0)
    cached_tokens = models.IntegerField(default=0, help_text="Part of input_tokens read from the prompt cache")
    cost_usd = models.DecimalField(max_digits=20, decimal_places=10, null=True, blank=True,
                                   help_text="Estimated USD at the prices of the time; null: the model has no price")
    duration_ms = models.IntegerField(default=0)
    success = models.BooleanField(default=True)
    error_message = models.TextField(blank=True, default="")
    superseded = models.BooleanField(
        default=False, help_text="Made by an interrupted attempt that ran again: kept and counted in spend, "
                                 "left out of the analysis")
    status = models.CharField(max_length=12, choices=CallStatus.choices, default=CallStatus.COMPLETED)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            # The sweeper's look for calls left open by a process that died: a handful of rows at any time.
            models.Index(fields=["execution"], condition=models.Q(status="started"), name="llm_open_calls"),
            models.Index(fields=["session", "created_at"], name="llm_session_created"),
            models.Index(fields=["execution", "iteration"], name="llm_exec_iteration"),
            models.Index(fields=["created_at"], name="llm_created"),  # spend per day, the daily limit
        ]

    def __str__(self) -> str:
        return f"{self.interaction_type} {self.provider}/{self.model}"


class InteractionText(models.Model):
    """A long message text of a session's LLM calls, stored once for all of them.

    Every call of an execution sends the whole conversation so far, so the alert and each tool result recur in
    every later call's record; a message longer than `services.interactions.SHARED_TEXT_OVER` is stored here and
    the record's conversation names it by digest (`content_ref`). Readers see the text back in place
    (selectors.conversations)."""

    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="interaction_texts")
    digest = models.CharField(max_length=64, help_text="SHA-256 of the text, hex")
    text = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "digest"], name="interaction_text_unique")]

    def __str__(self) -> str:
        return f"{self.digest[:12]} ({len(self.text)} chars)"


class MCPInteraction(models.Model):
    """One MCP tool call: arguments, the masked result, timing (debug view)."""

    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="mcp_interactions")
    execution = models.ForeignKey(
        AgentExecution, null=True, blank=True, on_delete=models.CASCADE, related_name="mcp_interactions"
    )
    iteration = models.IntegerField(default=0)
    server = models.CharField(max_length=200)
    tool = models.CharField(max_length=200)
    arguments = models.JSONField(default=dict)
    result = models.TextField(blank=True, default="", help_text="Masked result (capped)")
    raw_size = models.IntegerField(default=0)
    summarized = models.BooleanField(default=False)
    available_tools = models.JSONField(default=list, blank=True)
    duration_ms = models.IntegerField(default=0)
    success = models.BooleanField(default=True)
    error_message = models.TextField(blank=True, default="")
    superseded = models.BooleanField(
        default=False, help_text="Made by an interrupted attempt that ran again: kept and counted in spend, "
                                 "left out of the analysis")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["session", "created_at"], name="mcp_session_created"),
            models.Index(fields=["execution", "iteration"], name="mcp_exec_iteration"),
        ]

    def __str__(self) -> str:
        return f"{self.server}.{self.tool}"
