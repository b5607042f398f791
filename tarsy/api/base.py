"""What every API view shares: JSON-only bodies, storable text in bodies and query strings, the documented errors."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser
from rest_framework.views import APIView

from tarsy.web.inputs import json_problem, query_problems

from .serializers.common import ErrorSerializer


class StorableJSONParser(JSONParser):
    """JSON whose every string and key the database can store (see `inputs`); too deep a document is a 400 too."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            document = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply") from None
        problem = json_problem(document)
        if problem:
            raise ValidationError({problem[0]: [problem[1]]})
        return document


class JsonAPIView(APIView):
    # No docstring: the API docs take an operation's description from its view's docstring, inherited too.
    # JSON bodies only. Besides being the API's contract, this is CSRF defence for cookie-authenticated
    # browsers behind an auth proxy: a cross-site form can only send form/text bodies (→ 415), and a
    # cross-site JSON request needs a CORS preflight we never grant.
    # Query parameters are checked for storable text after authentication (a stranger learns nothing from a 400)
    # and before the handler runs; bodies when parsed.

    parser_classes = [StorableJSONParser]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        problems = query_problems(request.META.get("QUERY_STRING", ""))
        if problems:
            raise ValidationError(problems)


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """Schema entries for the error statuses an endpoint can answer (all share the `{error, detail}` shape)."""
    descriptions = {400: "Invalid request (reasons in `detail`)", 401: "Authentication required",
                    403: "Not allowed", 404: "Not found", 409: "Conflicts with the session's state",
                    413: "Payload too large", 415: "Unsupported media type"}
    return {code: OpenApiResponse(ErrorSerializer, description=descriptions.get(code, "Error")) for code in codes}


AUTH_ERRORS = (401, 403)
