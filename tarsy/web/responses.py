"""The JSON error body every web endpoint answers with: `{"error": …, "detail": …}` and the status."""

from __future__ import annotations

from django.http import JsonResponse


def json_error(status_code: int, error: str, detail=None) -> JsonResponse:
    return JsonResponse({"error": error, "detail": detail}, status=status_code)
