"""Rows for API tests, made through our services where a service exists (factories for the rest)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from tarsy.models import (
    AgentExecution,
    AlertSession,
    LLMInteraction,
    MCPInteraction,
    SessionCounters,
    Stage,
    TimelineEvent,
)
from tarsy.services.intake.alerts import session_submit

COUNTERS_FIELDS = {f.name for f in SessionCounters._meta.concrete_fields}


@pytest.fixture
def api():
    """A loopback client (auth mode none admits it)."""
    return APIClient(REMOTE_ADDR="127.0.0.1")


@pytest.fixture
def make_session():
    """Submit an alert through the service, then give the row the state a test needs."""

    def make(data="pod web-1 CrashLoopBackOff", *, status="completed", author="api-client", alert_type=None,
             final_analysis="", executive_summary="", started_minutes_ago=10, duration_s=60.0, **fields):
        session = session_submit(data=data, alert_type=alert_type, author=author)
        started = timezone.now() - timedelta(minutes=started_minutes_ago)
        updates = {"status": status, "final_analysis": final_analysis, "executive_summary": executive_summary,
                   **fields}
        if status != "pending":
            updates["started_at"] = started
        if status in ("completed", "failed", "cancelled", "timed_out"):
            updates["completed_at"] = started + timedelta(seconds=duration_s)
        counted = {name: updates.pop(name) for name in list(updates) if name in COUNTERS_FIELDS}
        AlertSession.all_objects.filter(id=session.id).update(**updates)
        SessionCounters.objects.filter(session_id=session.id).update(**counted)
        return AlertSession.all_objects.select_related("counters").get(id=session.id)

    return make


@pytest.fixture
def investigated(make_session):
    """A completed session with one stage, one execution, timeline events and LLM/MCP records."""

    def make(**kwargs):
        session = make_session(final_analysis="web-1 crashes: missing config map",
                               executive_summary="Missing config map.", input_tokens=120, output_tokens=30,
                               thinking_tokens=10, total_tokens=160, **kwargs)
        stage = Stage.objects.create(session=session, name="analysis", index=0, status="completed",
                                     final_analysis=session.final_analysis, started_at=session.started_at,
                                     completed_at=session.completed_at)
        execution = AgentExecution.objects.create(
            stage=stage, session=session, agent_name="KubernetesAgent", iteration_strategy="react",
            llm_provider="scripted", status="completed", iterations_completed=2, input_tokens=120,
            output_tokens=30, thinking_tokens=10, total_tokens=160)
        for seq, (kind, content) in enumerate([("llm_thinking", "Check the pod events for volume errors."),
                                               ("mcp_tool_call", "kubectl describe pod web-1"),
                                               ("final_analysis", session.final_analysis)], start=1):
            TimelineEvent.objects.create(session=session, stage=stage, execution=execution, iteration=1,
                                         sequence_number=seq, event_type=kind, content=content)
        LLMInteraction.objects.create(session=session, execution=execution, iteration=1, interaction_type="iteration",
                                      provider="scripted", model="script", conversation=[{"role": "user",
                                                                                           "content": "alert"}],
                                      input_tokens=120, output_tokens=30, thinking_tokens=10, total_tokens=160)
        MCPInteraction.objects.create(session=session, execution=execution, iteration=1, server="kubernetes-server",
                                      tool="pods_get", arguments={"name": "web-1"}, result="CrashLoopBackOff",
                                      success=False, error_message="boom")
        return session

    return make
