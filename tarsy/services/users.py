"""Dashboard and admin users: the first superuser of a fresh installation."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model

ADMIN_USERNAME = "admin"


def admin_user_create_first() -> str | None:
    """Create `admin` with a random password and return the password (shown once), unless a superuser exists."""
    user_model = get_user_model()
    if user_model.objects.filter(is_superuser=True).exists():
        return None
    password = secrets.token_urlsafe(12)
    user_model.objects.create_superuser(ADMIN_USERNAME, "", password)
    return password
