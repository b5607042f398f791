"""What every API view shares: JSON-only bodies and the documented error responses."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework.parsers import JSONParser
from rest_framework.views import APIView

from .serializers import ErrorSerializer


class JsonAPIView(APIView):
    """JSON bodies only. Besides being the API's contract, this is CSRF defence for cookie-authenticated
    browsers behind an auth proxy: a cross-site form can only send form/text bodies (→ 415), and a
    cross-site JSON request needs a CORS preflight we never grant."""

    parser_classes = [JSONParser]


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """Schema entries for the error statuses an endpoint can answer (all share the `{error, detail}` shape)."""
    descriptions = {400: "Invalid request (reasons in `detail`)", 401: "Authentication required",
                    403: "Not allowed", 404: "Not found", 409: "Conflicts with the session's state",
                    413: "Payload too large", 415: "Unsupported media type"}
    return {code: OpenApiResponse(ErrorSerializer, description=descriptions.get(code, "Error")) for code in codes}


AUTH_ERRORS = (401, 403)
