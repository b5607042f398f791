"""Persisted WebSocket events (for catch-up) and follow-up chat."""

from __future__ import annotations

import uuid

from django.db import models

from .sessions import AlertSession


class Event(models.Model):
    """A persistent event as sent on the socket; the id is the client's `last_event_id` cursor."""

    session = models.ForeignKey(AlertSession, null=True, blank=True, on_delete=models.CASCADE, related_name="events")
    channel = models.CharField(max_length=100, db_index=False)
    type = models.CharField(max_length=60)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    seq = models.PositiveBigIntegerField(
        null=True, blank=True,
        help_text="Position in its session channel (1, 2, 3 …, given in the writing transaction); null on `sessions`")

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["channel", "id"], name="event_channel_id"),
        ]
        constraints = [models.UniqueConstraint(fields=["channel", "seq"], name="event_channel_seq")]

    def __str__(self) -> str:
        return f"{self.id} {self.channel} {self.type}"


class Chat(models.Model):
    """The follow-up chat of a finished session (one per session)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.OneToOneField(AlertSession, on_delete=models.CASCADE, related_name="chat")
    created_by = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"chat for {self.session_id}"


class ChatUserMessage(models.Model):
    """A question; its answer is the chat stage it starts."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="messages")
    content = models.TextField()
    author = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return self.content[:60]
