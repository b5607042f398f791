"""Intake rate limit per client: DRF's sliding-window throttle, keyed by the connection's peer address (never
X-Forwarded-For, as for auth), counted in the cache every web process shares (Redis in production).

The rate is TARSY_INTAKE_RATE (e.g. `600/minute`; empty: no limit), read per request so a changed setting
applies at once. Past it: 429 in the API's error shape with `Retry-After`."""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from tarsy.identity import client_ip


class IntakeThrottle(SimpleRateThrottle):
    scope = "intake"

    def get_rate(self) -> str | None:
        return settings.TARSY_INTAKE_RATE or None

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_ip(request)}
