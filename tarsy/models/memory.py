"""Investigation memory: what TARSy learned from a scored or reviewed session, recalled by the next one."""

from __future__ import annotations

from django.db import models

from .sessions import AlertSession


class MemoryKind(models.TextChoices):
    """A fact about the environment, an alert's confirmed cause and fix, or what to check first / a dead end."""

    FACT = "fact", "Fact"
    INCIDENT = "incident", "Incident"
    PROCEDURE = "procedure", "Procedure"


class MemoryState(models.TextChoices):
    ACTIVE = "active", "Active"
    RETIRED = "retired", "Retired"


class Memory(models.Model):
    """One learning, masked, scoped (alert type, chain, labels) and sourced (session, evidence ids).

    `confidence` rises when a later reflection finds it again or a review confirms its session, and falls (down to
    retirement) when a review says the session was wrong. `embedding` is a plain JSON vector ranked in process:
    fine for thousands of rows (see docs/memory.md for where pgvector takes over)."""

    kind = models.CharField(max_length=12, choices=MemoryKind.choices)
    text = models.TextField(help_text="The learning, masked")
    alert_type = models.CharField(max_length=200, blank=True, default="", db_index=True,
                                  help_text="Recalled only for this alert type ('' = any)")
    chain_id = models.CharField(max_length=200, blank=True, default="", help_text="'' = any chain")
    labels = models.JSONField(default=dict, blank=True,
                              help_text="Scope labels (cluster, namespace, service): an alert with another value "
                                        "for one of them does not recall it")
    session = models.ForeignKey(AlertSession, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="memories", help_text="The session it was learned from")
    source_sessions = models.JSONField(default=list, blank=True,
                                       help_text="Ids of every session that produced or confirmed it")
    evidence_ids = models.JSONField(default=list, blank=True, help_text="Evidence ids (E<n>) of the source session")
    confidence = models.FloatField(default=0.5, help_text="0–1")
    embedding = models.JSONField(null=True, blank=True, help_text="Embedding vector of the text, when configured")
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    state = models.CharField(max_length=10, choices=MemoryState.choices, default=MemoryState.ACTIVE, db_index=True)
    retired_reason = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    confirmed_at = models.DateTimeField(help_text="Learned or last confirmed: its age for recall decay")
    updated_at = models.DateTimeField(auto_now=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    use_count = models.IntegerField(default=0)

    class Meta:
        verbose_name_plural = "memories"  # the admin would say "Memorys"
        ordering = ["-confirmed_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(confidence__gte=0) & models.Q(confidence__lte=1),
                                   name="memory_confidence_0_1"),
        ]

    def __str__(self) -> str:
        return f"M{self.id} {self.kind}: {self.text[:60]}"
