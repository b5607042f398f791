"""Page-number pagination with strict parameters: a bad `page` or `page_size` is a 400 with the reason."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from tarsy.web.inputs import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, ascii_int, printable


def _positive_int(request, name: str, default: int, maximum: int | None = None) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    value = ascii_int(raw)
    if value is None:
        raise ValidationError({name: [f"Must be a whole number in ASCII digits, got {printable(raw[:40])!r}."]})
    if value < 1 or (maximum is not None and value > maximum):
        bounds = f"between 1 and {maximum}" if maximum else "at least 1"
        raise ValidationError({name: [f"Must be {bounds}."]})
    return value


class SessionPagination(PageNumberPagination):
    page_size = DEFAULT_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def paginate_queryset(self, queryset, request, view=None):
        self.page_size = _positive_int(request, "page_size", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
        _positive_int(request, "page", 1)
        return super().paginate_queryset(queryset, request, view)

    def get_page_size(self, request):
        return self.page_size

    def get_paginated_response(self, data):
        assert self.page is not None, "DRF paginates the queryset before it asks for the response"
        return Response({
            "count": self.page.paginator.count,
            "page": self.page.number,
            "page_size": self.page_size,
            "total_pages": self.page.paginator.num_pages,
            "results": data,
        })

    def get_paginated_response_schema(self, schema):
        return {
            "type": "object",
            "required": ["count", "page", "page_size", "total_pages", "results"],
            "properties": {
                "count": {"type": "integer"},
                "page": {"type": "integer"},
                "page_size": {"type": "integer"},
                "total_pages": {"type": "integer"},
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view):
        return [
            {"name": "page", "required": False, "in": "query", "description": "Page number (1-based)",
             "schema": {"type": "integer", "minimum": 1}},
            {"name": "page_size", "required": False, "in": "query",
             "description": f"Rows per page (default {DEFAULT_PAGE_SIZE}, at most {MAX_PAGE_SIZE})",
             "schema": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE}},
        ]
