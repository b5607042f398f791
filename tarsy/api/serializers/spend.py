"""Spend over a range of days, by day or by chain, and the daily limit."""

from __future__ import annotations

import datetime
from typing import Any

from rest_framework import serializers


class SpendGroupSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="The UTC day (YYYY-MM-DD) or the chain id")
    cost_usd = serializers.DecimalField(max_digits=24, decimal_places=10)
    calls = serializers.IntegerField()
    unpriced_calls = serializers.IntegerField()
    sessions = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    thinking_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField()


class DailyLimitSerializer(serializers.Serializer):
    limit_usd = serializers.DecimalField(max_digits=24, decimal_places=10, allow_null=True)
    spent_today_usd = serializers.DecimalField(max_digits=24, decimal_places=10)
    reached = serializers.BooleanField()


class SpendQuerySerializer(serializers.Serializer):
    group_by = serializers.ChoiceField(choices=["day", "chain"], default="day")
    since = serializers.DateField(required=False, help_text="First UTC day (default: 29 days before `until`)")
    until = serializers.DateField(required=False, help_text="Last UTC day (default: today)")

    MAX_DAYS = 366  # a year of days in one answer; longer ranges are asked in parts

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        until = attrs.get("until") or datetime.datetime.now(datetime.UTC).date()
        since = attrs.get("since") or until - datetime.timedelta(days=29)
        if since > until:
            raise serializers.ValidationError({"since": "must not be after until"})
        if (until - since).days >= self.MAX_DAYS:
            raise serializers.ValidationError({"since": f"a range covers at most {self.MAX_DAYS} days"})
        return {**attrs, "since": since, "until": until}


class SpendSerializer(serializers.Serializer):
    group_by = serializers.CharField()
    since = serializers.DateField()
    until = serializers.DateField()
    groups = SpendGroupSerializer(many=True)
    total_usd = serializers.DecimalField(max_digits=24, decimal_places=10)
    daily_limit = DailyLimitSerializer()
