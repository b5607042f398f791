"""Django's stock ASGI handler, answering a request it cannot build with the API's JSON error.

Django builds the request before any middleware or view runs; when it cannot (a query string that is no UTF-8,
a body past DATA_UPLOAD_MAX_MEMORY_SIZE) it answers with a bare text page. `create_request` is where Django
makes that answer; everything else (the middleware chain, threads, database connections, streaming,
disconnects) is the stock handler's.
"""

from __future__ import annotations

from django.core.handlers.asgi import ASGIHandler

from .errors import json_error


class JsonErrorsASGIHandler(ASGIHandler):
    def create_request(self, scope, body_file):
        request, error = super().create_request(scope, body_file)
        if error is None:
            return request, None
        if error.status_code == 413:
            return None, json_error(413, "payload_too_large", "The request body exceeds the size limit.")
        return None, json_error(error.status_code, "bad_request", "The query string is not valid UTF-8.")
