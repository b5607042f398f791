"""Approved actions: what an action agent proposed, who decided, and what running and verifying it showed."""

from __future__ import annotations

import uuid

from django.db import models

from .sessions import AgentExecution, AlertSession


class ProposalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"  # decided; the execution runs it in its next iteration
    EXECUTING = "executing", "Executing"  # claimed by the iteration running it: never run twice
    EXECUTED = "executed", "Executed"  # ran (or failed to); `outcome` says how it went
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"
    WITHDRAWN = "withdrawn", "Withdrawn"  # TARSy took it back before it ran: the alert resolved, the execution ended


class ActionOutcome(models.TextChoices):
    VERIFIED = "verified", "Verified"
    NOT_VERIFIED = "not_verified", "Not verified"
    FAILED = "failed", "Failed"


class DryRunStatus(models.TextChoices):
    RAN = "ran", "Ran"  # `dry_run` holds the server's preview of the change
    FAILED = "failed", "Failed"  # `dry_run` holds the error; the proposal stands
    UNSUPPORTED = "unsupported", "No dry-run for this tool"


DECIDED_STATUSES = (ProposalStatus.APPROVED, ProposalStatus.EXECUTING, ProposalStatus.EXECUTED,
                    ProposalStatus.REJECTED, ProposalStatus.EXPIRED, ProposalStatus.WITHDRAWN)
# What a per-target rate limit counts (actions.rate_limit): what ran, runs, or may still run.
RATE_LIMITED_STATUSES = (ProposalStatus.PENDING, ProposalStatus.APPROVED, ProposalStatus.EXECUTING,
                         ProposalStatus.EXECUTED)
ACTION_MAX_COMMENT_CHARS = 2000


class ActionProposal(models.Model):
    """One call of an action tool an action agent asked for. It runs only once a person approves it, exactly as
    shown here: a proposal whose arguments masking would change is refused, so `arguments` is what runs."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="action_proposals")
    execution = models.ForeignKey(AgentExecution, on_delete=models.CASCADE, related_name="action_proposals")
    iteration = models.IntegerField(help_text="The iteration that proposed it")
    server = models.CharField(max_length=255)
    tool = models.CharField(max_length=255)
    target = models.TextField(blank=True, default="", help_text="What it acts on: the server and its identifying "
                                                                "arguments (actions.rate_limit's key)")
    arguments = models.JSONField(default=dict)
    justification = models.TextField(help_text="Masked")
    expected_effect = models.TextField(help_text="Masked")
    verify_tool = models.CharField(max_length=511, help_text="server.tool: the read that checks the effect")
    verify_arguments = models.JSONField(default=dict)
    verify_expect = models.TextField(help_text="Text the verification read must show once the action worked")
    dry_run = models.TextField(blank=True, default="", help_text="Masked output of the tool's server-side dry run")
    dry_run_status = models.CharField(max_length=20, choices=DryRunStatus.choices, default=DryRunStatus.UNSUPPORTED)
    status = models.CharField(max_length=20, choices=ProposalStatus.choices, default=ProposalStatus.PENDING)
    expires_at = models.DateTimeField()
    decided_by = models.CharField(max_length=255, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    comment = models.TextField(blank=True, default="", help_text="Masked")
    reason = models.TextField(blank=True, default="", help_text="Why TARSy withdrew it (no person decided that)")
    executed_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=20, choices=ActionOutcome.choices, blank=True, default="")
    result = models.TextField(blank=True, default="", help_text="The action's masked result")
    evidence = models.TextField(blank=True, default="", help_text="The verification's masked last read")
    delivered_in_iteration = models.IntegerField(null=True, blank=True,
                                                 help_text="The execution's iteration that was told the decision")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["status", "expires_at"], name="action_status_expiry"),
                   models.Index(fields=["execution", "status"], name="action_execution_status"),
                   models.Index(fields=["server", "created_at"], name="action_server_created")]

    def __str__(self) -> str:
        return f"{self.server}.{self.tool} ({self.status})"
