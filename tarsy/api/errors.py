"""One error shape for the whole API: `{"error": …, "detail": …}` with the right status, never HTML."""

from __future__ import annotations

import logging

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from tarsy.errors import ServiceError
from tarsy.web.responses import json_error

log = logging.getLogger("tarsy.api")

_DRF_ERROR_NAMES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
    406: "not_acceptable", 409: "conflict", 413: "payload_too_large", 415: "unsupported_media_type",
    429: "throttled",
}


def exception_handler(exc, context):
    if isinstance(exc, ServiceError):
        return Response({"error": exc.message, "detail": exc.detail}, status=exc.status_code)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    response = drf_exception_handler(exc, context)
    if response is None:
        log.exception("unhandled API error", exc_info=exc)
        return Response({"error": "internal_error", "detail": "An unexpected error occurred; it has been logged."},
                        status=status.HTTP_500_INTERNAL_SERVER_ERROR)
    code = response.status_code
    data = response.data
    if isinstance(exc, exceptions.ParseError):
        message = "malformed request body"
    elif isinstance(exc, exceptions.ValidationError):
        message = "validation_error"
    else:
        message = _DRF_ERROR_NAMES.get(code, "error")
    detail = data.get("detail", data) if isinstance(data, dict) and set(data) == {"detail"} else data
    response.data = {"error": message, "detail": detail}
    return response


def handler404(request, exception=None):
    """A page for a browser following a stale link (a deleted or expired session); JSON for the API and
    other clients."""
    if not request.path.startswith("/api/") and "text/html" in request.headers.get("Accept", ""):
        return render(request, "dashboard/not_found.html", {"path": request.path}, status=404)
    return json_error(404, "not_found", f"No route for {request.path}")


def handler500(request):
    return json_error(500, "internal_error", "An unexpected error occurred; it has been logged.")


@csrf_exempt  # changes nothing, and must answer JSON: CSRF's own refusal of a POST here would be an HTML 403 page
def api_not_found(request, *args, **kwargs):
    return json_error(404, "not_found", f"No API endpoint or resource at {request.path}")
