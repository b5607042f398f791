"""Silences (maintenance windows): time-bounded rules under which new alerts are kept but not investigated."""

from __future__ import annotations

from django.db import models


class SilenceMode(models.TextChoices):
    SKIP = "skip", "Skip: stored and shown, not investigated"
    LOW_PRIORITY = "low_priority", "Low priority: investigated after every other queued alert"


SILENCE_MAX_MATCHERS = 20
SILENCE_MAX_REASON_CHARS = 2_000


class Silence(models.Model):
    """Alerts arriving between `starts_at` and `ends_at` whose type and data match are silenced: kept (status
    `silenced`) without an investigation, or queued behind every other alert (`low_priority`). An empty
    `alert_type` matches any type; `matchers` maps dotted data paths (`labels.namespace`) to exact values."""

    alert_type = models.CharField(max_length=200, blank=True, default="", help_text="Empty: any alert type")
    matchers = models.JSONField(default=dict, blank=True,
                                help_text='Dotted alert-data path → exact value, e.g. {"labels.namespace": "payments"}')
    mode = models.CharField(max_length=20, choices=SilenceMode.choices, default=SilenceMode.SKIP)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    created_by = models.CharField(max_length=255)
    reason = models.TextField(help_text="Why (masked)")
    created_at = models.DateTimeField(auto_now_add=True)
    ended_by = models.CharField(max_length=255, blank=True, default="", help_text="Who ended it early")

    class Meta:
        ordering = ["-starts_at", "-id"]
        indexes = [models.Index(fields=["ends_at", "starts_at"], name="silence_window")]

    def __str__(self) -> str:
        what = self.alert_type or "any alert"
        return f"silence {self.id} of {what} until {self.ends_at:%Y-%m-%d %H:%M} UTC"

    def state(self, now) -> str:
        """scheduled (not yet started), active, or ended (expired, or ended early)."""
        if self.ends_at <= now:
            return "ended"
        return "active" if self.starts_at <= now else "scheduled"
