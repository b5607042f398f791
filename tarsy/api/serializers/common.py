"""Fields and shapes several resources share: the error body, token and cost totals, the session's link, stored
alert data and the budget marker."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tarsy.links import session_url
from tarsy.models import AlertSession

TOKEN_FIELDS = ("input_tokens", "output_tokens", "thinking_tokens", "total_tokens", "cached_tokens")
COST_FIELDS = ("cost_usd", "unpriced_calls")
COST_HELP = ("Estimated USD (a decimal string) of the priced LLM calls; null when calls were made but none "
             "could be priced. With unpriced_calls > 0 it is a floor")


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField()
    detail = serializers.JSONField(allow_null=True)


def shown_cost(cost: Decimal, unpriced_calls: int) -> str | None:
    """A total as the API shows it: unknown (null), never 0, when nothing of it could be priced."""
    return None if unpriced_calls and not cost else format(Decimal(cost), "f")  # "0.0000000000", never "0E-10"


class CostMixin(serializers.Serializer):
    cost_usd = serializers.SerializerMethodField(help_text=COST_HELP)

    def get_cost_usd(self, row) -> str | None:
        return shown_cost(row.cost_usd, row.unpriced_calls)


class TokensSerializer(serializers.Serializer):
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    thinking_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField()


class BudgetReachedSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["tokens", "cost_usd", "tool_calls", "wall_time"])
    limit = serializers.FloatField()
    used = serializers.FloatField()
    message = serializers.CharField()


@extend_schema_field(OpenApiTypes.ANY)
class StoredAlertField(serializers.Field):
    """Alert data as it was posted: an object or array comes back as JSON (it is stored as indented JSON text),
    text as the string."""

    def __init__(self, **kwargs):
        super().__init__(read_only=True, **kwargs)

    def to_representation(self, text: str) -> Any:
        if text.lstrip()[:1] in ("{", "["):
            try:
                return json.loads(text)
            except ValueError:
                pass
        return text


@extend_schema_field(OpenApiTypes.URI)
class SessionURLField(serializers.Field):
    """The session's dashboard page as an absolute URL, for links from Slack, PagerDuty or a ticket: built from
    `system.external_url`, else from the request's host."""

    def __init__(self, **kwargs):
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, session: AlertSession) -> str:
        return session_url(session.id, self.context.get("request"))
