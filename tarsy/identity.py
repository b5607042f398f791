"""Who is asking: the client's address, a trusted proxy's identity header, an API token header, the author name.

Shared by the API's authentication (tarsy.api.auth), the WebSocket admission (tarsy.streaming.auth) and the
dashboard, so none of them imports another's package for it.
"""

from __future__ import annotations

import ipaddress

from django.contrib.auth import get_user_model

from tarsy.config import DEFAULT_AUTHOR, get_config  # DEFAULT_AUTHOR lives there: see its comment

TOKEN_SCHEMES = ("token", "bearer")


def client_ip(request) -> str:
    """The connection's peer address, never X-Forwarded-For (which any client can write)."""
    return request.META.get("REMOTE_ADDR", "") or ""


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def from_trusted_proxy(request) -> bool:
    address = client_ip(request)
    trusted = get_config().system.trusted_proxies
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for entry in trusted:
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def proxy_identity(request) -> str:
    """X-Forwarded-User > X-Forwarded-Email, honoured only in `proxy` mode and only from a trusted proxy. In mode
    none any local program can write them, and in token mode the token says who asks: there a header would let
    anyone name themselves an approver (an approver's name or group decides actions)."""
    if get_config().system.auth.mode != "proxy" or not from_trusted_proxy(request):
        return ""
    return (request.META.get("HTTP_X_FORWARDED_USER") or request.META.get("HTTP_X_FORWARDED_EMAIL") or "").strip()


def proxy_groups(request) -> set[str]:
    """X-Forwarded-Groups (comma-separated, as oauth2-proxy sends it), honoured only with proxy_identity."""
    if not proxy_identity(request):
        return set()
    return {g.strip() for g in request.META.get("HTTP_X_FORWARDED_GROUPS", "").split(",") if g.strip()}


def request_groups(request) -> set[str]:
    """The asker's groups: the trusted proxy's, or the Django groups of a signed-in or token user."""
    groups = proxy_groups(request)
    user = getattr(request, "user", None)
    if not groups and user is not None and getattr(user, "is_authenticated", False) and hasattr(user, "groups"):
        groups = set(user.groups.values_list("name", flat=True))
    return groups


def request_author(request) -> str:
    identity = proxy_identity(request)
    if identity:
        return identity
    user = getattr(request, "user", None)
    if user is not None and getattr(user, "is_authenticated", False):
        return user.get_username()
    return DEFAULT_AUTHOR


def authorization_token(header: str) -> str | None:
    """The token of an `Authorization: Token <t>` (or `Bearer <t>`) header; "" when that scheme has no token,
    None when the header is absent or of another scheme."""
    scheme, _, value = header.strip().partition(" ")
    return value.strip() if scheme.lower() in TOKEN_SCHEMES else None


def identity_for_email(email: str) -> str:
    """The TARSy identity of the person with this (verified elsewhere) email: in proxy mode the email itself (SSO
    proxies such as oauth2-proxy name people by email), else the username of the one active user with it; ''
    when none (or several) match."""
    email = email.strip()
    if not email:
        return ""
    if get_config().system.auth.mode == "proxy":
        return email
    user_model = get_user_model()
    names = list(user_model.objects.filter(email__iexact=email, is_active=True)
                 .values_list(user_model.USERNAME_FIELD, flat=True)[:2])
    return str(names[0]) if len(names) == 1 else ""
