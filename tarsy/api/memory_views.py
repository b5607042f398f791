"""Investigation memory endpoints: list (search, filters), detail with its record of changes, correction (PATCH),
retirement and reactivation, each change recorded under the asker's identity."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.response import Response

from tarsy.identity import request_author
from tarsy.selectors.memories import memories_list
from tarsy.services import memories

from .base import AUTH_ERRORS, JsonAPIView, errors
from .pagination import SessionPagination
from .serializers.memories import (
    MemoryDetailSerializer,
    MemoryPatchSerializer,
    MemoryQuerySerializer,
    MemoryReactivateSerializer,
    MemoryRetireSerializer,
    MemorySerializer,
)


def _detail(memory) -> Response:
    return Response(MemoryDetailSerializer(memories.memory_with_changes(memory_id=memory.id)).data)


class MemoryListView(JsonAPIView, generics.ListAPIView):
    """What TARSy has learned from past investigations, most recently confirmed first."""

    serializer_class = MemorySerializer
    pagination_class = SessionPagination

    def get_queryset(self):
        query = MemoryQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        return memories_list(search=params.get("search", ""), kind=params.get("kind", ""),
                             state=params.get("state", ""), alert_type=params.get("alert_type", ""),
                             session_id=params.get("session"))

    @extend_schema(parameters=[MemoryQuerySerializer],
                   responses={200: MemorySerializer(many=True), **errors(400, 404, *AUTH_ERRORS)})
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class MemoryDetailView(JsonAPIView):
    """One memory with its provenance, use and record of changes; PATCH corrects it (text, kind, confidence,
    labels; the state only through /retire and /reactivate)."""

    @extend_schema(responses={200: MemoryDetailSerializer, **errors(404, *AUTH_ERRORS)})
    def get(self, request, memory_id):
        return Response(MemoryDetailSerializer(memories.memory_with_changes(memory_id=memory_id)).data)

    @extend_schema(request=MemoryPatchSerializer, responses={200: MemoryDetailSerializer,
                                                             **errors(400, 404, 415, *AUTH_ERRORS)})
    def patch(self, request, memory_id):
        body = MemoryPatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return _detail(memories.memory_update(memory_id=memory_id, actor=request_author(request),
                                              **body.validated_data))


class MemoryRetireView(JsonAPIView):
    """Stop recalling a memory (kept, with the reason, for the record)."""

    @extend_schema(request=MemoryRetireSerializer, responses={200: MemoryDetailSerializer,
                                                              **errors(400, 404, 415, *AUTH_ERRORS)})
    def post(self, request, memory_id):
        body = MemoryRetireSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reason = body.validated_data.get("reason") or "retired by an engineer"
        return _detail(memories.memory_retire(memory_id=memory_id, reason=reason, actor=request_author(request)))


class MemoryReactivateView(JsonAPIView):
    """Recall a retired memory again: an explicit step with a reason, recorded (the quota may retire another)."""

    @extend_schema(request=MemoryReactivateSerializer, responses={200: MemoryDetailSerializer,
                                                                  **errors(400, 404, 415, *AUTH_ERRORS)})
    def post(self, request, memory_id):
        body = MemoryReactivateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return _detail(memories.memory_reactivate(memory_id=memory_id, reason=body.validated_data["reason"],
                                                  actor=request_author(request)))
