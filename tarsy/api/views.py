"""Thin API views: validate, call one service, shape the answer."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from tarsy.config import get_config
from tarsy.services import sessions as session_service

from .auth import request_author
from .serializers import AlertAcceptedSerializer, AlertSubmitSerializer, SessionDetailSerializer


class AlertSubmitView(APIView):
    @extend_schema(request=AlertSubmitSerializer, responses={202: AlertAcceptedSerializer})
    def post(self, request):
        body = AlertSubmitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        session = session_service.session_submit(
            data=data["data"], alert_type=data.get("alert_type") or None, runbook=data.get("runbook") or None,
            mcp=data.get("mcp") or None, author=request_author(request),
        )
        return Response({"session_id": str(session.id), "status": "queued"}, status=status.HTTP_202_ACCEPTED)


class AlertTypesView(APIView):
    def get(self, request):
        config = get_config()
        return Response({
            "default_alert_type": config.defaults.alert_type,
            "alert_types": [{"alert_type": t, "chain_id": c, "description": config.chains[c].description}
                            for t, c in sorted(config.alert_types().items())],
        })


class SessionDetailView(APIView):
    @extend_schema(responses=SessionDetailSerializer)
    def get(self, request, session_id):
        session = session_service.session_get(session_id=session_id)
        return Response(SessionDetailSerializer(session).data)
