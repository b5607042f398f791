"""Sessions, stages and agent executions: the investigation's skeleton."""

from __future__ import annotations

import uuid

from django.db import models


class SessionStatus(models.TextChoices):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"
    SILENCED = "silenced"  # arrived under a silence (tarsy.services.silences): kept, never investigated


TERMINAL_SESSION_STATUSES = (
    SessionStatus.COMPLETED,
    SessionStatus.FAILED,
    SessionStatus.CANCELLED,
    SessionStatus.TIMED_OUT,
    SessionStatus.SILENCED,
)
ACTIVE_SESSION_STATUSES = (SessionStatus.IN_PROGRESS, SessionStatus.CANCELLING)


class CheckResult(models.TextChoices):
    """What a proactive check's run found (tarsy.services.checks)."""

    HEALTHY = "healthy"  # closed quietly: no triage, no Slack
    PROBLEM = "problem"  # the normal path: triage and Slack
    DUPLICATE = "duplicate"  # a problem the check's open problem session already holds: counted there


class ExecStatus(models.TextChoices):
    """Shared by Stage and AgentExecution."""

    PENDING = "pending"
    ACTIVE = "active"
    WAITING = "waiting"  # an orchestrator parked until a sub-agent's result arrives: no task in flight
    QUEUED = "queued"  # a dispatched sub-agent waiting for a free slot (orchestrator.max_concurrent)
    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


TERMINAL_EXEC_STATUSES = (ExecStatus.COMPLETED, ExecStatus.FAILED, ExecStatus.TIMED_OUT, ExecStatus.CANCELLED)


class Severity(models.TextChoices):
    """How urgent an alert is; dispatch claims higher severities first."""

    CRITICAL = "critical"
    HIGH = "high"
    WARNING = "warning"
    INFO = "info"


class LiveSessionManager(models.Manager):
    """Default manager: soft-deleted sessions are invisible everywhere but `all_objects`."""

    def get_queryset(self):
        return super().get_queryset().filter(deleted_at__isnull=True)


class TokenTotals(models.Model):
    """What the LLM calls under a row added up to: tokens by kind and their estimated cost."""

    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    thinking_tokens = models.BigIntegerField(default=0)
    total_tokens = models.BigIntegerField(default=0)
    cached_tokens = models.BigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=20, decimal_places=10, default=0,
                                   help_text="Estimated USD of the priced calls")
    unpriced_calls = models.IntegerField(default=0, help_text="Calls whose model has no price: cost_usd is a floor")

    class Meta:
        abstract = True


class AlertSession(models.Model):
    """One alert's investigation, from submission to final analysis. What its iterations raise (event numbers,
    evidence ids, token totals) lives apart, in its `SessionCounters` row (`session.counters`)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    alert_data = models.TextField(help_text="Alert payload as submitted (masked), stored as text")
    alert_type = models.CharField(max_length=200, db_index=True)
    title = models.CharField(max_length=255, blank=True, default="", db_index=True,
                             help_text="Which alert this is, in one line (tarsy.intake.titles)")
    fingerprint = models.CharField(
        max_length=128, blank=True, default="", db_index=True,
        help_text="Identity of the alert across repeats (sender's fingerprint or derived from its data)",
    )
    severity = models.CharField(max_length=16, choices=Severity.choices, default=Severity.WARNING)
    occurrence_count = models.IntegerField(default=1, help_text="Alerts with this fingerprint it absorbed, itself too")
    last_seen_at = models.DateTimeField(null=True, blank=True, help_text="When the latest repeat arrived")
    group_key = models.CharField(max_length=200, blank=True, default="", db_index=True,
                                 help_text="Correlation group it leads (shared labels or the sender's group_key)")
    related_count = models.IntegerField(default=0, help_text="Alerts of its group attached to it")
    agent_type = models.CharField(max_length=200, blank=True, default="")
    chain_id = models.CharField(max_length=200, db_index=True)
    status = models.CharField(max_length=20, choices=SessionStatus.choices, default=SessionStatus.PENDING)
    final_analysis = models.TextField(blank=True, default="")
    executive_summary = models.TextField(blank=True, default="")
    executive_summary_error = models.TextField(blank=True, default="")
    mcp_selection = models.JSONField(null=True, blank=True, help_text="Per-alert MCP server/tool override")
    author = models.CharField(max_length=255, blank=True, default="", db_index=True)
    runbook_url = models.TextField(blank=True, default="")
    error_message = models.TextField(blank=True, default="")
    current_stage_index = models.IntegerField(default=0)
    worker_id = models.CharField(max_length=255, blank=True, default="", help_text="Worker that claimed it")
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    resume_count = models.IntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    citations = models.JSONField(
        null=True, blank=True, help_text="The final analysis's citations as verified when it was written"
    )
    budget_reached = models.JSONField(
        null=True, blank=True, help_text="The budget that forced the investigation to conclude: kind, limit, used",
    )
    # Triage (tarsy.services.triage): empty until the session is terminal, then needs_review → in_progress → resolved.
    triage_status = models.CharField(max_length=20, blank=True, default="", db_index=True)
    assignee = models.CharField(max_length=255, blank=True, default="", db_index=True)
    resolution = models.CharField(max_length=20, blank=True, default="")
    resolution_note = models.TextField(blank=True, default="", help_text="Masked")
    silenced_by = models.ForeignKey("tarsy.Silence", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="sessions", help_text="The silence it arrived under")
    # Proactive checks (tarsy.services.checks): the check that started it, and what its run found.
    check_name = models.CharField(max_length=100, blank=True, default="", db_index=True)
    check_result = models.CharField(max_length=20, blank=True, default="",
                                    choices=CheckResult.choices)
    triage_changed_at = models.DateTimeField(null=True, blank=True, db_index=True,
                                             help_text="When triage_status last changed (the Triage view's order)")

    objects = LiveSessionManager()
    all_objects = models.Manager()  # noqa: DJ012 - ruff takes models.Manager() for a field

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "created_at"], name="session_status_created"),
            models.Index(fields=["deleted_at", "created_at"], name="session_deleted_created"),
        ]

    def __str__(self) -> str:
        return f"{self.alert_type} {str(self.id)[:8]} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_SESSION_STATUSES

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.completed_at:
            return (self.completed_at - self.started_at).total_seconds()
        return None


class SessionCounters(TokenTotals):
    """What a session's iterations raise, on a narrow row of its own: its event numbers, evidence ids, token and
    cost totals, the time of its last LLM or MCP call. Raised and read back in one statement
    (tarsy.services.counters); the session row keeps the alert, its status and its triage.

    Created with the session (tarsy.services.intake); a session made another way gets its row with the first
    raise (`session_counters_raise` inserts it), so no session is ever without counters once they count."""

    session = models.OneToOneField(AlertSession, primary_key=True, on_delete=models.CASCADE, related_name="counters")
    event_seq = models.PositiveBigIntegerField(
        default=0, help_text="The last `Event.seq` given on its channel (services.events.events_number)",
    )
    evidence_count = models.IntegerField(
        default=0, help_text="Evidence ids issued so far: the last tool result's E<n> (agents.citations)"
    )
    last_interaction_at = models.DateTimeField(null=True, blank=True, help_text="When its last LLM or MCP call ended")

    class Meta:
        verbose_name_plural = "session counters"

    def __str__(self) -> str:
        return f"counters of {self.session_id}"


class OccurrenceKind(models.TextChoices):
    OCCURRENCE = "occurrence"  # a repeat of the session's own alert (same fingerprint)
    RELATED = "related"  # another alert of the group the session leads


class AlertOccurrence(models.Model):
    """An alert attached to an existing session instead of starting an investigation; its data kept masked."""

    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="occurrences")
    kind = models.CharField(max_length=12, choices=OccurrenceKind.choices)
    alert_type = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=128, blank=True, default="")
    severity = models.CharField(max_length=16, choices=Severity.choices, default=Severity.WARNING)
    alert_data = models.TextField(help_text="Alert payload as received (masked)")
    author = models.CharField(max_length=255, blank=True, default="")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "kind", "id"], name="occurrence_session_kind")]

    def __str__(self) -> str:
        return f"{self.kind} of {self.session_id} at {self.received_at}"


class ParallelType(models.TextChoices):
    MULTI_AGENT = "multi_agent"
    REPLICA = "replica"


class StageKind(models.TextChoices):
    INVESTIGATION = "investigation"
    SYNTHESIS = "synthesis"
    CHAT = "chat"


class StageType(models.TextChoices):
    """What a chain stage's agents may do (its config's `type`), shown and audited: an action stage proposes changes."""

    INVESTIGATION = "investigation"
    ACTION = "action"


class Stage(models.Model):
    """One chain stage of a session (also synthesis and chat stages)."""

    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="stages")
    name = models.CharField(max_length=200)
    index = models.IntegerField(help_text="Position in the session; synthesis and chat stages get their own index")
    kind = models.CharField(max_length=20, choices=StageKind.choices, default=StageKind.INVESTIGATION)
    type = models.CharField(max_length=20, choices=StageType.choices, default=StageType.INVESTIGATION,
                            help_text="A chain stage's config type: `action` for a stage that proposes actions")
    chain_stage_index = models.IntegerField(null=True, blank=True, help_text="Index in the chain config")
    expected_agent_count = models.IntegerField(default=1)
    # NULL (not "") marks a stage that is not parallel, and the API shows it as null.
    parallel_type = models.CharField(max_length=20, choices=ParallelType.choices, null=True, blank=True)  # noqa: DJ001
    success_policy = models.CharField(max_length=10, null=True, blank=True)  # noqa: DJ001
    status = models.CharField(max_length=20, choices=ExecStatus.choices, default=ExecStatus.PENDING)
    error_message = models.TextField(blank=True, default="")
    final_analysis = models.TextField(blank=True, default="", help_text="What later stages see")
    chat_message = models.OneToOneField(
        "tarsy.ChatUserMessage", null=True, blank=True, on_delete=models.SET_NULL, related_name="stage"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["session", "index"]
        constraints = [models.UniqueConstraint(fields=["session", "index"], name="stage_unique_index")]

    def __str__(self) -> str:
        return f"{self.index}: {self.name} ({self.status})"


class AgentExecution(TokenTotals):
    """One agent (or replica) working inside a stage; its iterations are Celery tasks."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="executions")
    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="executions")
    agent_name = models.CharField(max_length=200, help_text="Display name, e.g. KubernetesAgent-2")
    agent_config_name = models.CharField(max_length=200, default="")
    agent_index = models.IntegerField(default=0)
    iteration_strategy = models.CharField(max_length=40)
    llm_provider = models.CharField(max_length=200, blank=True, default="")
    llm_backend = models.CharField(max_length=40, blank=True, default="")
    status = models.CharField(max_length=20, choices=ExecStatus.choices, default=ExecStatus.PENDING)
    error_message = models.TextField(blank=True, default="")
    final_analysis = models.TextField(blank=True, default="")
    current_iteration = models.IntegerField(default=0, help_text="Last iteration started")
    iterations_completed = models.IntegerField(default=0)
    max_iterations = models.IntegerField(default=20)
    iteration_timeout_s = models.FloatField(default=120.0)
    consecutive_timeouts = models.IntegerField(default=0)
    last_interaction_failed = models.BooleanField(default=False)
    resume_count = models.IntegerField(default=0)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(
        null=True, blank=True, help_text="While in the future, the current iteration belongs to a running task"
    )
    attempt = models.PositiveIntegerField(
        default=0, help_text="Claims so far: the fencing token of the task that holds the lease; a task's writes "
                             "land only while it is still the current attempt")
    # Sub-agents (tarsy.pipeline.sub_agents): dispatched by the execution `parent_execution` of the same stage.
    parent_execution = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE,
                                         related_name="sub_agents")
    task = models.TextField(blank=True, default="", help_text="What the orchestrator asked the sub-agent (masked)")
    depth = models.PositiveSmallIntegerField(default=0, help_text="0: a stage's agent; a sub-agent: its parent's + 1")
    deadline_at = models.DateTimeField(null=True, blank=True, help_text="A sub-agent still running then times out")
    delivered_in_iteration = models.IntegerField(
        null=True, blank=True, help_text="The parent's iteration that was given this sub-agent's result")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["stage", "agent_index"]
        indexes = [models.Index(fields=["status", "last_heartbeat_at"], name="exec_status_heartbeat")]

    def __str__(self) -> str:
        return f"{self.agent_name} ({self.status}, iteration {self.current_iteration})"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_EXEC_STATUSES
