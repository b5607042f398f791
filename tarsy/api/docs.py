"""The OpenAPI schema and its Swagger UI, behind the API's own authentication.

drf-spectacular renders errors with the view's renderer (YAML, an HTML template); here they take the API's one
JSON error shape, so a client without credentials gets a 401/403 it can read.
"""

from __future__ import annotations

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView


class JsonErrors(APIView):
    def handle_exception(self, exc):
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)


class SchemaView(JsonErrors, SpectacularAPIView):
    """GET /api/schema/: the OpenAPI description (YAML, or JSON on request)."""


class DocsView(JsonErrors, SpectacularSwaggerSplitView):
    """GET /api/docs/: Swagger UI, served from the drf-spectacular-sidecar package rather than a CDN; its start-up
    script is a file of its own (`?script=`), and its page rules a stylesheet (templates/api/swagger_ui.html), which
    the Content-Security-Policy admits, where it refuses inline ones."""

    template_name = "api/swagger_ui.html"
