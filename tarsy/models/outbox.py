"""The transactional outbox: work decided in a transaction, kept until it is handed to the broker."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class OutboxTask(models.Model):
    """A decided task (tarsy.decisions) written in the transaction that decided it and deleted once sent.

    A row left behind (the broker was down, the process died between commit and send) is sent by the outbox
    relay (tarsy/relay.py): decided work never waits for the sweeper because the broker blinked."""

    kind = models.CharField(max_length=32)  # the decision's class name
    fields = models.JSONField(default=dict)  # the decision's fields
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.kind}({self.fields})"
