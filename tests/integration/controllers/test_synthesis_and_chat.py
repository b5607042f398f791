"""Synthesis over a parallel stage's investigations, and chat replies, through the real stage services."""

from __future__ import annotations

import pytest

from controllers.base import StepStatus
from tarsy.models import AgentExecution, Stage, TimelineEvent
from tarsy.pipeline.finish import session_finish
from tarsy.services.chats import chat_submit

from .conftest import (
    PARALLEL_ALERT_TYPE,
    event_types,
    executions,
    interactions,
    messages,
    react_action,
    run_to_end,
    sent_roles,
    start_session,
    timeline,
)

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

SRE = ["Thought: Pods look bad.\nFinal Answer: web-1 is crash-looping on a missing configmap."]
DB = [react_action("Check the database pods.", "k8s.get_pods", '{"namespace": "db"}'),
      "Thought: The database is fine.\nFinal Answer: postgres-0 is healthy; the database is not involved."]
SYNTHESIS = {"thinking": "Both agree the web tier is at fault.",
             "text": "Root cause: configmap app-config is missing, so web-1 crash-loops. The database is healthy."}


def _finish_parallel_stage(session) -> AgentExecution:
    """Run both parallel agents; the last one to finish starts the synthesis stage."""
    for execution in executions(session, 0):
        run_to_end(execution.id)
    (synthesis,) = executions(session, 1)
    return synthesis


def test_synthesis_is_one_tool_less_call_over_the_formatted_results(configure):
    configure({"SreAgent": SRE, "DbAgent": DB, "SynthesisAgent": [SYNTHESIS]})
    session = start_session(PARALLEL_ALERT_TYPE)
    synthesis = _finish_parallel_stage(session)
    assert Stage.objects.get(id=synthesis.stage_id).kind == "synthesis"

    outcomes = run_to_end(synthesis.id)

    assert [o.status for o in outcomes] == [StepStatus.COMPLETED]
    synthesis.refresh_from_db()
    assert (synthesis.status, synthesis.final_analysis) == ("completed", SYNTHESIS["text"])
    events = timeline(synthesis.id)
    assert [(e.event_type, e.metadata.get("source")) for e in events] == [("llm_thinking", "native"),
                                                                          ("final_analysis", "native")]
    assert events[1].content == SYNTHESIS["text"]
    system, user, reply = messages(synthesis.id)
    assert (system.role, user.role, reply.role) == ("system", "user", "assistant")
    formatted = user.content
    for needle in ("SreAgent", "DbAgent", "web-1 is crash-looping on a missing configmap.",
                   "postgres-0 is healthy", "k8s.get_pods", "Check the database pods."):
        assert needle in formatted, needle
    assert formatted.index("SreAgent") < formatted.index("DbAgent")
    (interaction,) = interactions(synthesis.id)
    assert (interaction.interaction_type, interaction.success) == ("synthesis", True)
    assert sent_roles(interaction) == ["system", "user", "assistant"]
    assert interaction.conversation[1]["content"] == formatted


def test_synthesis_retries_a_failed_call_then_fails_the_stage(configure):
    failure = {"error": {"message": "model overloaded", "code": "server_error", "retryable": True}}
    configure({"SreAgent": SRE, "DbAgent": DB, "SynthesisAgent": [failure]})
    session = start_session(PARALLEL_ALERT_TYPE)
    synthesis = _finish_parallel_stage(session)

    outcomes = run_to_end(synthesis.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.CONTINUE, StepStatus.FAILED]
    synthesis.refresh_from_db()
    assert synthesis.status == "failed" and "Failed after 3 attempts" in synthesis.error_message
    assert Stage.objects.get(id=synthesis.stage_id).status == "failed"
    assert event_types(synthesis.id) == ["error"] * 3
    assert [i.success for i in interactions(synthesis.id)] == [False] * 3
    # the first two failures go back to the model, the last one ends the stage
    assert [m.role for m in messages(synthesis.id)] == ["system", "user", "user", "user"]


def test_chat_uses_chat_prompts_and_records_chat_interactions(configure):
    final = "web-1 crashes because configmap app-config is missing."
    configure({
        "SreAgent": ["Thought: Seen enough.\nFinal Answer: " + final],
        "executive_summary": ["web-1 is down: missing configmap."],
        "ChatAgent": [react_action("Confirm with the events.", "k8s.get_events", '{"namespace": "prod"}'),
                      "Thought: The events confirm it.\nFinal Answer: Yes: the FailedMount events name app-config."],
    })
    session = start_session()
    (investigation,) = executions(session, 0)
    run_to_end(investigation.id)
    session_finish(session_id=session.id)
    session.refresh_from_db()
    assert session.status == "completed"

    _, stage = chat_submit(session_id=session.id, content="Is the configmap really the cause?", author="alice")
    (chat,) = stage.executions.all()
    outcomes = run_to_end(chat.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    chat.refresh_from_db()
    assert chat.final_analysis == "Yes: the FailedMount events name app-config."
    assert [i.interaction_type for i in interactions(chat.id)] == ["chat", "chat"]
    system, user = messages(chat.id)[:2]
    assert "## Follow-up chat" in system.content and "k8s.get_events" in system.content
    assert "Is the configmap really the cause?" in user.content and final in user.content
    assert event_types(chat.id) == ["llm_thinking", "llm_tool_call", "mcp_tool_call", "tool_result",
                                    "llm_thinking", "final_analysis"]
    question = TimelineEvent.objects.get(session=session, event_type="user_question")
    assert question.execution_id is None and question.stage_id == stage.id
    assert Stage.objects.get(id=stage.id).status == "completed"
