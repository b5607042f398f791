"""API tokens of programs that call TARSy in auth mode `token`."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class APIToken(models.Model):
    """One API client's token, kept only as its SHA-256 digest: a database leak yields no usable token.

    The token is random (256 bits), so an unsalted digest is safe to look up by; it is shown once, when created.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_token")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)  # not auto_now_add: migrated tokens keep theirs

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"API token of {self.user}"
