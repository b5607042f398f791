"""The one domain error type every layer raises or maps (the read side's bad filter is a 400); the API renders it as
`{"error", "detail"}` with its status. It imports nothing of TARSy, so any layer may use it."""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    status_code = 400
    error = "bad_request"

    def __init__(self, message: str, detail: Any = None):
        super().__init__(message)
        self.message = message
        self.detail = detail


class ValidationFailed(ServiceError):
    status_code = 400
    error = "validation_error"


class NotFound(ServiceError):
    status_code = 404
    error = "not_found"


class Conflict(ServiceError):
    status_code = 409
    error = "conflict"


class PayloadTooLarge(ServiceError):
    status_code = 413
    error = "payload_too_large"


class ServiceUnavailable(ServiceError):
    status_code = 503
    error = "service_unavailable"


class Forbidden(ServiceError):
    status_code = 403
    error = "forbidden"
