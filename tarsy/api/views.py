"""Thin API views for alerts and the system page: validate, call one service, shape the answer."""

from __future__ import annotations

from decimal import Decimal

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from tarsy.config import get_config
from tarsy.identity import request_author
from tarsy.links import session_url
from tarsy.pipeline.budget import daily_limit_warning, daily_spend
from tarsy.services import spend as spend_service
from tarsy.services.intake.alerts import session_receive
from tarsy.web.health import worker_status

from .base import AUTH_ERRORS, JsonAPIView, errors
from .serializers.alerts import AlertAcceptedSerializer, AlertSubmitSerializer, AlertTypesSerializer
from .serializers.spend import SpendQuerySerializer, SpendSerializer
from .serializers.system import MCPServersSerializer, WarningsSerializer
from .throttles import IntakeThrottle


class AlertSubmitView(JsonAPIView):
    """Submit an alert: a new session is queued (202), or the alert joins the session already investigating it
    (a repeat, or another alert of its group)."""

    throttle_classes = [IntakeThrottle]

    @extend_schema(request=AlertSubmitSerializer, responses={202: AlertAcceptedSerializer,
                                                             **errors(400, 413, 415, *AUTH_ERRORS)})
    def post(self, request):
        body = AlertSubmitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        receipt = session_receive(
            data=data["data"], alert_type=data.get("alert_type") or None, runbook=data.get("runbook") or None,
            mcp=data.get("mcp") or None, author=request_author(request), fingerprint=data.get("fingerprint", ""),
            severity=data.get("severity") or None, group_key=data.get("group_key", ""),
        )
        return Response({"session_id": str(receipt.session.id), "status": receipt.status,
                         "session_url": session_url(receipt.session.id, request),
                         "deduplicated": receipt.deduplicated, "related": receipt.related,
                         "occurrence_count": receipt.session.occurrence_count}, status=status.HTTP_202_ACCEPTED)


class AlertTypesView(JsonAPIView):
    """The configured alert types, each with the chain that investigates it, and the default alert type."""

    @extend_schema(responses={200: AlertTypesSerializer, **errors(*AUTH_ERRORS)})
    def get(self, request):
        config = get_config()
        return Response({
            "default_alert_type": config.defaults.alert_type,
            "alert_types": [{"alert_type": t, "chain_id": c, "description": config.chains[c].description}
                            for t, c in sorted(config.alert_types().items())],
        })


class SystemWarningsView(JsonAPIView):
    """Configuration warnings (e.g. missing API keys), MCP servers that fail, no live worker, the daily spend
    limit holding investigations back."""

    @extend_schema(responses={200: WarningsSerializer, **errors(*AUTH_ERRORS)})
    def get(self, request):
        from agents.mcp.health import check_servers

        config = get_config()
        warnings = [{"category": "config", "message": m} for m in config.warnings()]
        for server in check_servers(config):
            if server["status"] == "error":
                warnings.append({"category": "mcp", "message": f"MCP server {server['name']!r}: {server['error']}"})
        if worker_status()["status"] != "ok":  # the health probe's answer, shared for its window
            warnings.append({"category": "runtime",
                             "message": "No live worker: alerts are queued but not investigated"})
        spend_limit = daily_limit_warning()
        if spend_limit:
            warnings.append({"category": "budget", "message": spend_limit})
        return Response({"warnings": warnings})


class MCPServersView(JsonAPIView):
    """Every configured MCP server with its status and tools (checked at most every ~15 s)."""

    @extend_schema(responses={200: MCPServersSerializer, **errors(*AUTH_ERRORS)})
    def get(self, request):
        from agents.mcp.health import check_servers

        return Response({"servers": check_servers(get_config())})


class SpendView(JsonAPIView):
    """Estimated LLM spend per UTC day or per chain over a range of days, and today's against the daily limit."""

    @extend_schema(parameters=[SpendQuerySerializer], responses={200: SpendSerializer, **errors(400, *AUTH_ERRORS)})
    def get(self, request):
        query = SpendQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        groups = spend_service.spend_grouped(group_by=params["group_by"], since=params["since"],
                                             until=params["until"])
        today = daily_spend()
        return Response(SpendSerializer({
            **params, "groups": groups, "total_usd": sum((g["cost_usd"] for g in groups), Decimal(0)),
            "daily_limit": {"limit_usd": today.limit_usd, "spent_today_usd": today.spent_usd,
                            "reached": today.reached},
        }).data)
