"""API tokens: made for a named API client and shown once; requests are matched to them by digest."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth import get_user_model
from django.db import transaction

from tarsy.errors import Conflict
from tarsy.models import APIToken

TOKEN_BYTES = 32  # 256 random bits: unguessable, so an unsalted SHA-256 digest is a safe lookup key


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def api_token_create(*, name: str, replace: bool = False) -> str:
    """A new token for the API client `name` (a user without a password, created if needed); returns the token,
    which is not stored. An existing token is replaced only when `replace` is set: it cannot be shown again."""
    with transaction.atomic():
        user, created = get_user_model().objects.get_or_create(username=name, defaults={"is_active": True})
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        existing = APIToken.objects.select_for_update().filter(user=user).first()
        if existing is not None and not replace:
            raise Conflict(f"API client {name!r} already has a token", "a token is shown only when it is created; "
                                                                      "replace it to get a new one")
        token = secrets.token_urlsafe(TOKEN_BYTES)
        APIToken.objects.update_or_create(user=user, defaults={"digest": token_digest(token)})
    return token


def api_token_user(token: str):
    """The active user this token belongs to, or None."""
    if not token:
        return None
    row = APIToken.objects.select_related("user").filter(digest=token_digest(token), user__is_active=True).first()
    return row.user if row is not None else None
