"""Cross-site request forgery defence for the API in every auth mode.

A browser attaches ambient credentials to requests that other sites make it send: its loopback address (auth
mode none), the auth proxy's cookie (mode proxy) or a Django session cookie (any mode). DRF checks a CSRF
token only for the Django session, so every state-changing API request is checked here first:

- a browser's `Origin` (or, without one, `Sec-Fetch-Site`) must name TARSy itself or a CSRF_TRUSTED_ORIGINS
  origin — browsers send them on every cross-origin POST/PUT/PATCH/DELETE and a page cannot forge them;
- a `Content-Type`, when sent, must be application/json: an HTML form can only send form or text bodies, and a
  cross-site request with a JSON body needs a CORS preflight that TARSy never grants.

Programs (curl, SDKs, Alertmanager) send no Origin and JSON or no bodies; the dashboard's own fetch() calls are
same-origin and send JSON or nothing. Both are unaffected.

Slack's endpoints are exempt: Slack posts slash commands and interactions form-encoded, and every request there is
authenticated by its signature over the body (tarsy/slack/views.py), which no cross-site form can produce.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import JsonResponse

from tarsy.web.responses import json_error

API_PREFIX = "/api/"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
JSON = "application/json"
# "none": the user typed or bookmarked the URL — no page sent the request.
SAME_ORIGIN_FETCH_SITES = frozenset({"same-origin", "none"})
SLACK_SIGNED_PATHS = frozenset({"/api/v1/slack/events", "/api/v1/slack/commands", "/api/v1/slack/interactions"})


class CrossSiteGuard:
    """Middleware: refuse cross-site (403) and non-JSON (415) state-changing requests under /api/."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if (request.method not in SAFE_METHODS and request.path.startswith(API_PREFIX)
                and request.path not in SLACK_SIGNED_PATHS):
            refusal = refusal_for(request)
            if refusal is not None:
                return refusal
        return self.get_response(request)


def refusal_for(request) -> JsonResponse | None:
    origin = request.headers.get("Origin")
    if origin is not None:
        if not origin_allowed(request, origin):
            return json_error(403, "forbidden", f"cross-site request refused (Origin {origin})")
    else:
        site = request.headers.get("Sec-Fetch-Site")
        if site is not None and site not in SAME_ORIGIN_FETCH_SITES:
            return json_error(403, "forbidden", f"cross-site request refused (Sec-Fetch-Site {site})")
    if request.META.get("CONTENT_TYPE") and request.content_type != JSON:
        return json_error(415, "unsupported_media_type",
                          f"state-changing API requests take {JSON} bodies, not {request.content_type}")
    return None


def origin_allowed(request, origin: str) -> bool:
    """Our own host (any scheme: TLS may end at a proxy in front) or an origin listed in CSRF_TRUSTED_ORIGINS.
    The host was validated against ALLOWED_HOSTS, which also defeats DNS rebinding."""
    if origin.rstrip("/") in [o.rstrip("/") for o in settings.CSRF_TRUSTED_ORIGINS]:
        return True
    netloc = urlsplit(origin).netloc
    return bool(netloc) and netloc.lower() == request.get_host().lower()
