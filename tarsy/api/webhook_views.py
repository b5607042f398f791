"""Webhook intake endpoints: Alertmanager, Grafana and PagerDuty deliveries, each read and handed to one service.

Authentication: a source with `secret_env` set is authenticated by that secret alone — `Authorization: Bearer
<secret>` (Alertmanager `http_config.authorization`, Grafana's webhook authorization header) or PagerDuty's
`X-PagerDuty-Signature` HMAC of the raw body — because these senders cannot log in, and in auth mode none they
would not be on loopback. A source without a secret is authenticated like any API client, by the auth mode.
A secret named but not set in the environment refuses every request (503): it never falls open.
"""

from __future__ import annotations

import logging
import os

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response

from agents.config.schema import GroupedSourceConfig
from tarsy.config import get_config
from tarsy.errors import NotFound, ServiceUnavailable, ValidationFailed
from tarsy.identity import DEFAULT_AUTHOR, request_author
from tarsy.intake import payloads, replay, signatures
from tarsy.intake.items import Batch
from tarsy.links import session_url
from tarsy.services.intake import deliveries as intake_service

from .base import AUTH_ERRORS, JsonAPIView, errors
from .throttles import IntakeThrottle

log = logging.getLogger("tarsy.api")


class WebhookSource:
    """The sender, authenticated by its source's secret; not a database user."""

    is_authenticated = True
    is_staff = False

    def __init__(self, source: str):
        self.username = source

    def get_username(self) -> str:
        return self.username


class DeliverySessionSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    session_url = serializers.CharField()
    fingerprint = serializers.CharField()
    alert_type = serializers.CharField()
    severity = serializers.CharField()
    occurrence_count = serializers.IntegerField(help_text="Alerts the session absorbed, this one included")
    status = serializers.CharField(help_text="queued: a new session; attached: the alert joined an existing one; "
                                             "silenced: a new session kept without investigation (a silence)")
    silenced_by = serializers.IntegerField(allow_null=True, help_text="The silence the alert fell under, if any")
    deduplicated = serializers.BooleanField()  # a repeat of an alert: joined the session already on it
    related = serializers.BooleanField()  # another alert of a correlated group: joined the group's session
    warnings = serializers.ListField(child=serializers.CharField(),
                                     help_text="What intake set aside and why (a runbook_url on a host not allowed)")


class DeliveryResolutionSerializer(serializers.Serializer):
    fingerprint = serializers.CharField()
    session_id = serializers.UUIDField(allow_null=True)
    action = serializers.ChoiceField(choices=["cancelled", "annotated", "already_resolved", "unmatched"])


class DeliverySerializer(serializers.Serializer):
    sessions = DeliverySessionSerializer(many=True)
    resolved = DeliveryResolutionSerializer(many=True)
    ignored = serializers.ListField(child=serializers.CharField())


class WebhookView(JsonAPIView):
    source = ""
    throttle_classes = [IntakeThrottle]

    def read(self, body) -> Batch:
        raise NotImplementedError

    def secret(self) -> str | None:
        """The source's secret; None when it has none (the auth mode applies)."""
        settings = intake_service.source_config(self.source)
        if not settings.enabled:
            raise NotFound(f"{self.source} intake is disabled")
        if not settings.secret_env:
            return None
        secret = os.environ.get(settings.secret_env, "")
        if not secret:
            log.error("%s intake: %s is not set; refusing its webhooks", self.source, settings.secret_env)
            raise ServiceUnavailable(f"{self.source} intake is not ready: its secret is not configured")
        return secret

    def credential_valid(self, request, secret: str) -> bool:
        return signatures.bearer_matches(request.headers.get("Authorization", ""), secret)

    def perform_authentication(self, request):
        secret = self.secret()
        if secret is None:
            return super().perform_authentication(request)
        if not self.credential_valid(request, secret):
            raise exceptions.AuthenticationFailed(f"missing or invalid {self.source} webhook credential")
        request.user = WebhookSource(self.source)

    def check_permissions(self, request):
        if not isinstance(request.user, WebhookSource):
            super().check_permissions(request)

    def get_authenticate_header(self, request):
        return f'Bearer realm="{self.source}"'

    def post(self, request):
        batch = self.parsed(self.read, request.data)
        author = request_author(request)
        result = intake_service.intake_deliver(source=self.source, batch=batch,
                                               author=self.source if author == DEFAULT_AUTHOR else author)
        for entry in result.sessions:
            entry["session_url"] = session_url(entry["session_id"], request)
        return delivery_response(result.sessions, result.resolved, result.ignored)

    @staticmethod
    def parsed(read, body):
        try:
            return read(body)
        except payloads.PayloadInvalid as exc:
            raise ValidationFailed(exc.message, exc.detail) from None


def delivery_response(sessions: list, resolved: list, ignored: list) -> Response:
    return Response({"sessions": sessions, "resolved": resolved, "ignored": ignored}, status=status.HTTP_202_ACCEPTED)


WEBHOOK_RESPONSES = {202: DeliverySerializer, **errors(400, 404, 413, 415, *AUTH_ERRORS),
                     503: OpenApiResponse(description="The source's secret is named but not set")}


class AlertmanagerWebhookView(WebhookView):
    """Prometheus Alertmanager webhook (v4): one session per firing alert, or per group (`session_per: group`)."""

    source = "alertmanager"

    @extend_schema(request=dict, responses=WEBHOOK_RESPONSES)
    def post(self, request):
        return super().post(request)

    def read(self, body) -> Batch:
        config = intake_service.source_config(self.source)
        session_per = config.session_per if isinstance(config, GroupedSourceConfig) else "alert"
        return payloads.read_group(self.source, body, session_per=session_per)


class GrafanaWebhookView(AlertmanagerWebhookView):
    """Grafana unified alerting webhook contact point: Alertmanager's shape with Grafana's fields."""

    source = "grafana"


class PagerDutyWebhookView(WebhookView):
    """PagerDuty V3 webhook: `incident.triggered` starts an investigation, `incident.resolved` resolves it."""

    source = "pagerduty"

    @extend_schema(request=dict, responses=WEBHOOK_RESPONSES)
    def post(self, request):
        """A signed event is acted on once, and only while fresh (tarsy.intake.replay); an unsigned one comes
        from an API client the auth mode admitted."""
        if not isinstance(request.user, WebhookSource):
            return super().post(request)
        event = self.parsed(payloads.pagerduty_event, request.data)
        max_age = get_config().intake.pagerduty.max_event_age
        problem = (replay.event_age_problem(event.occurred_at, max_age) if event.occurred_at
                   else "the event has no occurred_at")
        if problem:
            raise exceptions.AuthenticationFailed(f"stale or undated pagerduty event: {problem}")
        if not event.id:
            raise ValidationFailed("a signed pagerduty event needs its id", {"event.id": ["This field is required."]})
        if not replay.event_claim(source=self.source, event_id=event.id, max_age_s=max_age):
            return delivery_response([], [], [f"repeated event {event.id}"])
        try:
            return super().post(request)
        except BaseException:
            replay.event_release(source=self.source, event_id=event.id)
            raise

    def credential_valid(self, request, secret: str) -> bool:
        return signatures.pagerduty_signature_matches(request.headers.get("X-PagerDuty-Signature", ""),
                                                      request.body, secret)

    def get_authenticate_header(self, request):
        return 'X-PagerDuty-Signature realm="pagerduty"'

    def read(self, body) -> Batch:
        return payloads.read_pagerduty(body)
