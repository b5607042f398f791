"""WebSocket admission: the API's auth mode plus an Origin check."""

from __future__ import annotations

from urllib.parse import urlparse

from django.conf import settings

from tarsy.api.auth import is_loopback
from tarsy.config import get_config


def _origin(scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"origin":
            return value.decode("latin-1")
    return ""


def origin_allowed(scope) -> bool:
    """No Origin (non-browser clients) is fine; a browser's Origin must be allowed explicitly or be our host."""
    origin = _origin(scope)
    if not origin:
        return True
    allowed = get_config().system.allowed_ws_origins
    if origin in allowed or "*" in allowed:
        return True
    host = urlparse(origin).hostname or ""
    hosts = settings.ALLOWED_HOSTS
    return host in hosts or "*" in hosts or (settings.EMBEDDED and host in ("localhost", "127.0.0.1", "::1"))


def websocket_allowed(scope) -> bool:
    if not origin_allowed(scope):
        return False
    mode = get_config().system.auth.mode
    client = (scope.get("client") or ("", 0))[0]
    if mode == "none":
        return is_loopback(client or "")
    user = scope.get("user")
    if user is not None and getattr(user, "is_authenticated", False):
        return True
    if mode == "proxy":
        from tarsy.api.auth import from_trusted_proxy

        headers = dict(scope.get("headers", []))
        meta = {"REMOTE_ADDR": client}

        class _R:
            META = meta

        return from_trusted_proxy(_R) and bool(headers.get(b"x-forwarded-user") or headers.get(b"x-forwarded-email"))
    if mode == "token":
        from rest_framework.authtoken.models import Token

        query = dict(p.split("=", 1) for p in scope.get("query_string", b"").decode().split("&") if "=" in p)
        key = query.get("token", "")
        return bool(key) and Token.objects.filter(key=key).exists()
    return False
