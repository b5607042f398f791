"""Content-Security-Policy on every response, in every mode (embedded included).

The dashboard loads its scripts and styles from /static/ and has no inline code, so the policy allows nothing
inline and nothing from elsewhere: markup that slips through escaping cannot run. Django 5.2 has no CSP
setting of its own (6.0 adds one); settings.CONTENT_SECURITY_POLICY holds the policy, a view may set its own.
"""

from __future__ import annotations

from django.conf import settings


class ContentSecurityPolicy:
    """Middleware: the configured policy on each response that has none."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if settings.CONTENT_SECURITY_POLICY:
            response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response
