"""Absolute links to the dashboard, for places outside it (Slack, PagerDuty, API clients).

Built from `system.external_url`, the address people reach TARSy at (behind a proxy or ingress it is not the
address the server sees). Without one, a request's own host is the best guess, and with no request a path
relative to wherever TARSy is served.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from tarsy.config import get_config


def session_path(session_id: Any) -> str:
    return reverse("dashboard-session", kwargs={"session_id": session_id})


def session_url(session_id: Any, request=None) -> str:
    base = get_config().system.external_url
    if base:
        return base + session_path(session_id)
    if request is not None:
        return request.build_absolute_uri(session_path(session_id))
    return session_path(session_id)
