"""Triage endpoints: one session's triage state and actions, and bulk claim/resolve from the list."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from tarsy.errors import NotFound
from tarsy.identity import request_author
from tarsy.selectors.triage import session_triage
from tarsy.services import triage

from .base import AUTH_ERRORS, JsonAPIView, errors
from .serializers.triage import TriageBulkInSerializer, TriageBulkSerializer, TriageInSerializer, TriageSerializer


def _triage_data(session_id) -> dict:
    session = session_triage(session_id=session_id)
    if session is None:
        raise NotFound(f"session {session_id} not found")
    return TriageSerializer(session).data


class SessionTriageView(JsonAPIView):
    """Who owns the finished session's follow-up and how it ended; POST an action (claim, assign, acknowledge,
    resolve, reopen). A claim on a session someone else took answers 409."""

    @extend_schema(responses={200: TriageSerializer, **errors(404, *AUTH_ERRORS)})
    def get(self, request, session_id):
        return Response(_triage_data(session_id))

    @extend_schema(request=TriageInSerializer,
                   responses={200: TriageSerializer, **errors(400, 404, 409, 415, *AUTH_ERRORS)})
    def post(self, request, session_id):
        body = TriageInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        session = triage.triage_act(session_id=session_id, actor=request_author(request), **body.validated_data)
        return Response(_triage_data(session.id))


class SessionTriageBulkView(JsonAPIView):
    """Claim or resolve many sessions; each session's result is reported (a conflict on one leaves the rest)."""

    @extend_schema(operation_id="v1_sessions_triage_bulk_create", request=TriageBulkInSerializer,
                   responses={200: TriageBulkSerializer, **errors(400, 415, *AUTH_ERRORS)})
    def post(self, request):
        body = TriageBulkInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        results = triage.triage_bulk(actor=request_author(request), **body.validated_data)
        return Response({"results": results})
