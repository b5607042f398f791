"""Every LLM call is recorded by one path: a failed controller call, a failed tool-result summary and a failed
executive summary are stored alike — the conversation sent without a reply, the provider's text masked."""

from __future__ import annotations

import json

import pytest

from tarsy.models import AlertSession, LLMInteraction
from tarsy.pipeline.finish import session_finish

from .conftest import only_execution, react_action, run_to_end, start_session

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(90)]

TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"
FINAL = "web-1 crashes because configmap app-config is missing."


def failure(label: str) -> dict:
    return {"error": {"message": f"{label} refused: token: {TOKEN}", "code": "bad_request"}}


def test_failed_controller_summarizer_and_executive_summary_calls_are_stored_alike(configure):
    configure({
        "SreAgent": [
            react_action("Read the batch logs.", "k8s.get_logs", json.dumps({"namespace": "prod", "pod": "batch-0"})),
            failure("iteration"),
            f"Thought: That explains it.\nFinal Answer: {FINAL}",
        ],
        "summarization": [failure("summarization")],
        "executive_summary": [failure("executive summary")],
    })
    session = start_session()
    execution = only_execution(session)
    run_to_end(execution.id)
    session_finish(session_id=session.id)

    session = AlertSession.objects.get(id=session.id)
    assert session.status == "completed" and session.final_analysis == FINAL
    failed = {row.interaction_type: row for row in LLMInteraction.objects.filter(session=session, success=False)}
    assert set(failed) == {"iteration", "summarization", "executive_summary"}
    for kind, label in (("iteration", "iteration"), ("summarization", "summarization"),
                        ("executive_summary", "executive summary")):
        row = failed[kind]
        assert row.error_message.startswith(f"{label} refused: token: __MASKED_"), row.error_message
        assert TOKEN not in json.dumps(row.conversation) + row.error_message
        # the conversation sent, no reply: the last message is what was asked, never an assistant turn
        assert row.conversation and row.conversation[-1]["role"] == "user"
        assert all(None not in message.values() for message in row.conversation)
        assert (row.provider, row.model) == ("scripted", "")
    assert session.executive_summary == "" and "__MASKED_" in session.executive_summary_error
    # a good call stores its reply after what was sent, serialised the same way
    answered = LLMInteraction.objects.filter(session=session, success=True, interaction_type="iteration").last()
    assert answered.conversation[-1] == {"role": "assistant", "content": f"Thought: That explains it.\n"
                                                                         f"Final Answer: {FINAL}",
                                         "tool_calls": []}
