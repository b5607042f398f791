"""DRF authentication by `system.auth.mode`: none (loopback only), proxy (trusted X-Forwarded-*), token."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.permissions import BasePermission

from tarsy.config import get_config
from tarsy.identity import authorization_token, client_ip, is_loopback, proxy_identity
from tarsy.services.api_tokens import api_token_user


class ProxyUser:
    """An identity asserted by the trusted proxy; not a database user."""

    is_authenticated = True
    is_staff = False

    def __init__(self, name: str):
        self.username = name

    def get_username(self) -> str:
        return self.username


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
