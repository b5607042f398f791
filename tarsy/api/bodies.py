"""Request bodies of the API: read once, within DATA_UPLOAD_MAX_MEMORY_SIZE, whatever framing the client used.

Django refuses a body past the limit by raising `RequestDataTooBig` wherever the body is first read — inside
a DRF parser or a signature check, where it surfaced as a 500. And DRF takes a request without Content-Length
for one without a body, so a `Transfer-Encoding: chunked` alert was answered "data: This field is required"
although the server had received it. This middleware reads the body of every state-changing API request up
front: past the limit it answers 413 in the API's error shape; a chunked body gets the Content-Length it has.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig

from .cross_site import API_PREFIX, SAFE_METHODS
from .errors import json_error


class RequestBodyLimit:
    """Middleware: 413 for an API body over the limit; a chunked body's length made known to DRF."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in SAFE_METHODS and request.path.startswith(API_PREFIX):
            try:
                body = request.body
            except RequestDataTooBig:
                return json_error(413, "payload_too_large",
                                  f"The request body exceeds {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.")
            if not request.META.get("CONTENT_LENGTH") and body:
                request.META["CONTENT_LENGTH"] = str(len(body))
        return self.get_response(request)
