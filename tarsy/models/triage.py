"""Triage: who owns a finished investigation's follow-up and how it ended, apart from the accuracy review."""

from __future__ import annotations

from django.db import models

from .sessions import AlertSession


class TriageStatus(models.TextChoices):
    NEEDS_REVIEW = "needs_review", "Needs review"
    IN_PROGRESS = "in_progress", "In progress"
    RESOLVED = "resolved", "Resolved"


class Resolution(models.TextChoices):
    ACTIONED = "actioned", "Actioned"
    DISMISSED = "dismissed", "Dismissed"
    DUPLICATE = "duplicate", "Duplicate"
    FALSE_POSITIVE = "false_positive", "False positive"


TRIAGE_ACTIONS = ("claim", "assign", "acknowledge", "resolve", "reopen")
TRIAGE_BULK_ACTIONS = ("claim", "resolve")
TRIAGE_MAX_NOTE_CHARS = 10_000
TRIAGE_MAX_BULK = 200


class TriageActivity(models.Model):
    """One triage transition, kept for the shift hand-over: who did what, when, from which state to which."""

    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="triage_activity")
    actor = models.CharField(max_length=255)
    action = models.CharField(max_length=20)
    from_status = models.CharField(max_length=20, blank=True, default="")
    to_status = models.CharField(max_length=20, blank=True, default="")
    assignee = models.CharField(max_length=255, blank=True, default="")
    resolution = models.CharField(max_length=20, blank=True, default="")
    note = models.TextField(blank=True, default="", help_text="Masked")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["session", "created_at"], name="triage_activity_session")]

    def __str__(self) -> str:
        return f"{self.action} by {self.actor}"
