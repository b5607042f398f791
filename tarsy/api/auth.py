"""Authentication by `system.auth.mode`: none (loopback only), proxy (trusted X-Forwarded-*), token."""

from __future__ import annotations

import ipaddress

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.permissions import BasePermission

from tarsy.config import get_config
from tarsy.services.api_tokens import api_token_user

DEFAULT_AUTHOR = "api-client"


def client_ip(request) -> str:
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
    """X-Forwarded-User > X-Forwarded-Email, honoured only from a trusted proxy (or in mode none, which serves
    loopback clients only). In token mode it names the author but never authenticates."""
    mode = get_config().system.auth.mode
    if mode != "none" and not from_trusted_proxy(request):
        return ""
    return (request.META.get("HTTP_X_FORWARDED_USER") or request.META.get("HTTP_X_FORWARDED_EMAIL") or "").strip()


def request_author(request) -> str:
    identity = proxy_identity(request)
    if identity:
        return identity
    user = getattr(request, "user", None)
    if user is not None and getattr(user, "is_authenticated", False):
        return user.get_username()
    return DEFAULT_AUTHOR


class ProxyUser:
    """An identity asserted by the trusted proxy; not a database user."""

    is_authenticated = True
    is_staff = False

    def __init__(self, name: str):
        self.username = name

    def get_username(self) -> str:
        return self.username


TOKEN_SCHEMES = ("token", "bearer")


def authorization_token(header: str) -> str | None:
    """The token of an `Authorization: Token <t>` (or `Bearer <t>`) header; "" when that scheme has no token,
    None when the header is absent or of another scheme."""
    scheme, _, value = header.strip().partition(" ")
    return value.strip() if scheme.lower() in TOKEN_SCHEMES else None


class ConfiguredAuthentication(BaseAuthentication):
    def authenticate(self, request):
        mode = get_config().system.auth.mode
        if mode == "proxy":
            identity = proxy_identity(request)
            if identity:
                return ProxyUser(identity), None
        if mode == "token":
            token = authorization_token(request.META.get("HTTP_AUTHORIZATION", ""))
            if token is not None:
                user = api_token_user(token)
                if user is None:
                    raise exceptions.AuthenticationFailed("Invalid token")
                return user, None
        return SessionAuthentication().authenticate(request)

    def authenticate_header(self, request):
        return "Token" if get_config().system.auth.mode == "token" else None


class ConfiguredPermission(BasePermission):
    message = "Authentication required"

    def has_permission(self, request, view):
        mode = get_config().system.auth.mode
        if mode == "none":
            if not is_loopback(client_ip(request)):
                # Not "credentials missing": no credentials would help, so say why.
                raise exceptions.PermissionDenied("Auth mode 'none' accepts loopback clients only")
            return True
        return bool(request.user and getattr(request.user, "is_authenticated", False))

from . import schema as _schema  # noqa: E402,F401  (registers the OpenAPI description of the auth above)
