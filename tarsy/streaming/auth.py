"""WebSocket admission: the API's auth mode plus an Origin check.

none: loopback clients only. proxy: identity headers from a trusted proxy, or a Django session login.
token: an API token (`?token=` or `Authorization: Token …`), or a Django session login.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from tarsy.config import get_config
from tarsy.identity import authorization_token, from_trusted_proxy, is_loopback
from tarsy.services.api_tokens import api_token_user


def _header(scope, name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return ""


def origin_allowed(scope) -> bool:
    """No Origin (non-browser clients) is fine; a browser's Origin must be listed (allowed_ws_origins or
    CSRF_TRUSTED_ORIGINS: scheme, host and port) or be TARSy itself, as the REST guard decides
    (tarsy.api.cross_site): its host and port those of the Host header, which ALLOWED_HOSTS must admit."""
    origin = _header(scope, b"origin")
    if not origin:
        return True
    allowed = [*get_config().system.allowed_ws_origins, *settings.CSRF_TRUSTED_ORIGINS]
    if origin.rstrip("/") in [a.rstrip("/") for a in allowed] or "*" in allowed:
        return True
    host = _header(scope, b"host").lower()
    domain, _ = split_domain_port(host)
    return bool(domain) and urlsplit(origin).netloc.lower() == host and validate_host(domain, settings.ALLOWED_HOSTS)


class _Meta:
    """Just enough of a request for the API's address checks."""

    def __init__(self, address: str):
        self.META = {"REMOTE_ADDR": address}


def _token_valid(scope) -> bool:
    key = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token") or [""])[0]
    key = key or authorization_token(_header(scope, b"authorization")) or ""
    return bool(key) and api_token_user(key) is not None


def websocket_allowed(scope) -> bool:
    """Runs in a thread (it may query the database)."""
    if not origin_allowed(scope):
        return False
    mode = get_config().system.auth.mode
    client = (scope.get("client") or ("", 0))[0] or ""
    if mode == "none":
        return is_loopback(client)
    user = scope.get("user")
    if user is not None and getattr(user, "is_authenticated", False):
        return True
    if mode == "proxy":
        identity = _header(scope, b"x-forwarded-user") or _header(scope, b"x-forwarded-email")
        return bool(identity) and from_trusted_proxy(_Meta(client))
    if mode == "token":
        return _token_valid(scope)
    return False
