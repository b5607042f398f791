"""Investigation memory: what TARSy learned from a scored or reviewed session, recalled by the next one."""

from __future__ import annotations

from django.contrib.postgres.search import SearchVectorField
from django.db import models

from .sessions import AlertSession


class MemoryKind(models.TextChoices):
    """A fact about the environment, an alert's confirmed cause and fix, or what to check first / a dead end."""

    FACT = "fact", "Fact"
    INCIDENT = "incident", "Incident"
    PROCEDURE = "procedure", "Procedure"


class MemoryState(models.TextChoices):
    """Only active memories are recalled; a pending one waits for an engineer (its `review_reason` says why)."""

    ACTIVE = "active", "Active"
    PENDING = "pending", "Waiting for review"
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
    review_reason = models.CharField(max_length=500, blank=True, default="",
                                     help_text="Why it was held for an engineer's review when learned")
    created_at = models.DateTimeField(auto_now_add=True)
    confirmed_at = models.DateTimeField(help_text="Learned or last confirmed: its age for recall decay")
    updated_at = models.DateTimeField(auto_now=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    use_count = models.IntegerField(default=0)
    search = SearchVectorField(null=True, editable=False,
                               help_text="PostgreSQL: to_tsvector('english', text), kept by a trigger for the "
                                         "full-text index; unused (NULL) on SQLite")

    class Meta:
        verbose_name_plural = "memories"  # the admin would say "Memorys"
        ordering = ["-confirmed_at", "-id"]
        indexes = [
            # recall's scope filter and the quota's count per alert type (the PostgreSQL full-text index on
            # `search` and its trigger are made by the migration memory_changes_quota_indexes: SQLite has neither)
            models.Index(fields=["alert_type", "state", "chain_id"], name="memory_scope_idx"),
            # the list's order, and recall's most recently confirmed memories for the semantic ranking
            models.Index(fields=["-confirmed_at", "-id"], name="memory_recent_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=models.Q(confidence__gte=0) & models.Q(confidence__lte=1),
                                   name="memory_confidence_0_1"),
        ]

    def __str__(self) -> str:
        return f"M{self.id} {self.kind}: {self.text[:60]}"


class MemoryChangeAction(models.TextChoices):
    LEARNED = "learned", "Learned"
    CREATED = "created", "Created"
    CONFIRMED = "confirmed", "Confirmed"
    REVIEWED = "reviewed", "Reviewed"
    EDITED = "edited", "Edited"
    RETIRED = "retired", "Retired"
    REACTIVATED = "reactivated", "Reactivated"


class MemoryChange(models.Model):
    """One change to a memory: who (a person's identity, or the part of TARSy that made it), when, why, and the
    changed fields before and after. Written by tarsy.services.memory_changes with the change, never edited."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="changes")
    action = models.CharField(max_length=12, choices=MemoryChangeAction.choices)
    actor = models.CharField(max_length=255, help_text="A person's identity, or reflection / review / quota")
    reason = models.CharField(max_length=500, blank=True, default="")
    before = models.JSONField(default=dict, blank=True, help_text="The changed fields as they were")
    after = models.JSONField(default=dict, blank=True, help_text="The changed fields as they became")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["memory", "-at"], name="memory_change_memory_at")]

    def __str__(self) -> str:
        return f"M{self.memory_id} {self.action} by {self.actor}"
