"""Shapes of proactive checks with their last run."""

from __future__ import annotations

from rest_framework import serializers

from .common import SessionURLField


class CheckRunSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    session_url = SessionURLField()
    status = serializers.CharField()
    check_result = serializers.CharField(help_text="healthy, problem, duplicate; empty until it ends")
    triage_status = serializers.CharField()
    created_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)


class CheckSerializer(serializers.Serializer):
    name = serializers.CharField(source="check.name")
    schedule = serializers.CharField(source="check.schedule", help_text="cron: minute hour day month weekday (UTC)")
    chain = serializers.CharField(source="check.chain")
    instruction = serializers.CharField(source="check.instruction")
    enabled = serializers.BooleanField(source="check.enabled")
    last_result = serializers.CharField(help_text="healthy / problem / duplicate, else the last run's status")
    last_run = CheckRunSerializer(allow_null=True)
    open_problem = CheckRunSerializer(allow_null=True, help_text="The run whose problem is still being triaged")
