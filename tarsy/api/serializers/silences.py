"""Shapes of silences (maintenance windows) and of a new one."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import serializers

from tarsy.models import SILENCE_MAX_MATCHERS, SILENCE_MAX_REASON_CHARS, Silence, SilenceMode
from tarsy.selectors.silences import SILENCE_STATES


class SilenceSerializer(serializers.ModelSerializer):
    state = serializers.SerializerMethodField(help_text="scheduled, active or ended")
    session_count = serializers.IntegerField(read_only=True, default=0, help_text="Sessions it silenced")

    class Meta:
        model = Silence
        fields = ["id", "alert_type", "matchers", "mode", "starts_at", "ends_at", "state", "created_by", "reason",
                  "created_at", "ended_by", "session_count"]

    def get_state(self, silence: Silence) -> str:
        return silence.state(timezone.now())


class SilenceInSerializer(serializers.Serializer):
    alert_type = serializers.CharField(required=False, allow_blank=True, max_length=200,
                                       help_text="Empty: any alert type")
    matchers = serializers.DictField(child=serializers.CharField(max_length=500), required=False,
                                     help_text="Dotted alert-data path → exact value, e.g. "
                                               '{"labels.namespace": "payments"}; at most '
                                               f"{SILENCE_MAX_MATCHERS}")
    mode = serializers.ChoiceField(choices=SilenceMode.choices, required=False, default=SilenceMode.SKIP)
    starts_at = serializers.DateTimeField(required=False, help_text="Default: now")
    ends_at = serializers.DateTimeField()
    reason = serializers.CharField(max_length=SILENCE_MAX_REASON_CHARS)


class SilenceQuerySerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=SILENCE_STATES, required=False, default="current",
                                    help_text="current (the default): active or scheduled")
