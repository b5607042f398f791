"""Silences (maintenance windows) and proactive checks: list, create and end silences; list and run checks."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.response import Response

from tarsy.errors import NotFound
from tarsy.identity import request_author
from tarsy.selectors.checks import checks_overview
from tarsy.selectors.silences import silence_detail, silences_list
from tarsy.services import checks, silences

from .base import AUTH_ERRORS, JsonAPIView, errors
from .pagination import SessionPagination
from .serializers.checks import CheckRunSerializer, CheckSerializer
from .serializers.silences import SilenceInSerializer, SilenceQuerySerializer, SilenceSerializer


class SilenceListView(JsonAPIView, generics.ListAPIView):
    """Silences, newest window first (by default the current ones: active or scheduled); POST creates one.
    Alerts arriving under an active silence that matches them are stored and shown but not investigated
    (`skip`), or investigated after every other queued alert (`low_priority`)."""

    serializer_class = SilenceSerializer
    pagination_class = SessionPagination

    def get_queryset(self):
        query = SilenceQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return silences_list(state=query.validated_data["state"])

    @extend_schema(parameters=[SilenceQuerySerializer],
                   responses={200: SilenceSerializer(many=True), **errors(400, 404, *AUTH_ERRORS)})
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(request=SilenceInSerializer, responses={201: SilenceSerializer, **errors(400, 415, *AUTH_ERRORS)})
    def post(self, request, *args, **kwargs):
        body = SilenceInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        silence = silences.silence_create(actor=request_author(request), **body.validated_data)
        return Response(SilenceSerializer(silence_detail(silence_id=silence.id)).data, status=status.HTTP_201_CREATED)


class SilenceDetailView(JsonAPIView):
    """One silence; DELETE ends it now (kept for the record: who ended it and when). 409 when already ended."""

    @extend_schema(responses={200: SilenceSerializer, **errors(404, *AUTH_ERRORS)})
    def get(self, request, silence_id):
        silence = silence_detail(silence_id=silence_id)
        if silence is None:
            raise NotFound(f"silence {silence_id} not found")
        return Response(SilenceSerializer(silence).data)

    @extend_schema(responses={200: SilenceSerializer, **errors(404, 409, *AUTH_ERRORS)})
    def delete(self, request, silence_id):
        silence = silences.silence_end(silence_id=silence_id, actor=request_author(request))
        return Response(SilenceSerializer(silence_detail(silence_id=silence.id)).data)


class CheckListView(JsonAPIView):
    """The proactive checks of `checks:` in tarsy.yaml, each with its last run and its open problem, if any."""

    @extend_schema(responses={200: CheckSerializer(many=True), **errors(*AUTH_ERRORS)})
    def get(self, request):
        return Response(CheckSerializer(checks_overview(), many=True, context={"request": request}).data)


class CheckRunView(JsonAPIView):
    """Run a check now: its session is queued at once (404 for an unknown check, 409 while a run is in flight)."""

    @extend_schema(request=None, responses={202: CheckRunSerializer, **errors(404, 409, *AUTH_ERRORS)})
    def post(self, request, name):
        session = checks.check_run(name=name, author=request_author(request))
        return Response(CheckRunSerializer(session, context={"request": request}).data,
                        status=status.HTTP_202_ACCEPTED)

