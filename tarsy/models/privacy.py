"""A session's pseudonyms: which placeholder stands for which identifier (agents.privacy)."""

from __future__ import annotations

from django.db import models

from .sessions import AlertSession


class Pseudonym(models.Model):
    """One identifier of a session and its placeholder `<kind:number>`. Stored per session so every worker, the
    chat and later stages give the model the same placeholder; deleted with the session (retention)."""

    session = models.ForeignKey(AlertSession, on_delete=models.CASCADE, related_name="pseudonyms")
    kind = models.CharField(max_length=16)
    number = models.PositiveIntegerField()
    value = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "value"], name="pseudonym_one_per_value"),
            models.UniqueConstraint(fields=["session", "kind", "number"], name="pseudonym_one_per_placeholder"),
        ]

    def __str__(self) -> str:
        return f"<{self.kind}:{self.number}>"
