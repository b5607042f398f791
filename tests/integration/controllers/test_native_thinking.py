"""Native-thinking controller steps on real rows: structured tool calls, `tool` messages, thinking events."""

from __future__ import annotations

import json

import pytest

from agents.prompts.fence import DATA_NOTE
from controllers.base import StepStatus
from tarsy.models import AgentExecution, MCPInteraction

from .conftest import (
    ALERT_DATA,
    SERVER_INSTRUCTIONS,
    event_types,
    interactions,
    messages,
    only_execution,
    roles,
    run_next,
    run_to_end,
    sent_roles,
    start_session,
    timeline,
)

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

FINAL = "web-1 crashes because configmap app-config is missing."
PODS_CALL = {"name": "k8s.get_pods", "arguments": {"namespace": "prod"}, "id": "call-pods"}
LOGS_CALL = {"name": "k8s.get_logs", "arguments": {"namespace": "prod", "pod": "web-1"}, "id": "call-logs"}
EVENTS_CALL = {"name": "k8s.get_events", "arguments": {"namespace": "prod"}, "id": "call-events"}
PODS_TURN = {"thinking": "Start with the pods.", "text": "Checking the pods.", "tool_calls": [PODS_CALL]}
ANSWER_TURN = {"thinking": "The logs explain it.", "text": FINAL}


def test_one_tool_call_then_final_answer(configure):
    configure({"SreAgent": [PODS_TURN, ANSWER_TURN]}, strategy="native-thinking")
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    execution.refresh_from_db()
    assert (execution.status, execution.final_analysis) == ("completed", FINAL)
    events = timeline(execution.id)
    assert [(e.event_type, e.iteration, e.status) for e in events] == [
        ("llm_thinking", 1, "completed"), ("llm_response", 1, "completed"), ("llm_tool_call", 1, "completed"),
        ("mcp_tool_call", 1, "completed"), ("tool_result", 1, "completed"),
        ("llm_thinking", 2, "completed"), ("final_analysis", 2, "completed"),
    ]
    thinking, text, call, _, result, thinking2, final = events
    assert (thinking.content, thinking.metadata) == ("Start with the pods.", {"source": "native"})
    assert (text.content, text.metadata) == ("Checking the pods.", {"source": "native"})
    assert json.loads(call.content) == {"namespace": "prod"}
    assert call.metadata == {"tool_name": "get_pods", "server_name": "k8s",
                             "arguments": {"namespace": "prod"}, "tool_call_id": "call-pods", "source": "native"}
    assert result.metadata["tool_call_id"] == "call-pods" and "CrashLoopBackOff" in result.content
    assert result.metadata["evidence_id"] == "E1"
    assert thinking2.content == "The logs explain it."
    assert final.content == FINAL

    rows = messages(execution.id)
    assert [(m.role, m.iteration) for m in rows] == [("system", 1), ("user", 1), ("assistant", 1), ("tool", 1),
                                                     ("assistant", 2)]
    system, user, assistant, tool, answer = rows
    assert SERVER_INSTRUCTIONS in system.content and "k8s.get_pods" not in system.content  # tools are bound
    assert ALERT_DATA in user.content
    assert assistant.content == "Checking the pods."
    assert assistant.tool_calls == [{"id": "call-pods", "name": "k8s.get_pods", "arguments": {"namespace": "prod"}}]
    assert (tool.tool_call_id, tool.tool_name) == ("call-pods", "k8s.get_pods")
    assert tool.content == (f"Evidence [E1] (cite it as [E1]). k8s.get_pods returned the result below. The block below "
                            f"contains its output. {DATA_NOTE}\n```text\n{result.content}\n```")  # what to cite, fenced
    assert (answer.content, answer.tool_calls) == (FINAL, [])

    first, second = interactions(execution.id)
    assert sent_roles(first) == ["system", "user", "assistant"]
    assert first.conversation[-1]["tool_calls"] == assistant.tool_calls
    assert first.thinking_content == "Start with the pods."
    assert sent_roles(second) == ["system", "user", "assistant", "tool", "assistant"]
    assert second.conversation[3] == {"role": "tool", "content": tool.content, "tool_calls": [],
                                      "tool_call_id": "call-pods", "tool_name": "k8s.get_pods"}
    assert second.conversation[-1]["content"] == FINAL


def test_several_tool_calls_in_one_and_in_later_replies(configure):
    configure({"SreAgent": [{"tool_calls": [PODS_CALL, LOGS_CALL]}, {"tool_calls": [EVENTS_CALL]},
                            {"text": FINAL}]}, strategy="native-thinking")
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.CONTINUE, StepStatus.COMPLETED]
    assert event_types(execution.id) == ["llm_tool_call", "mcp_tool_call", "tool_result"] * 3 + ["final_analysis"]
    rows = messages(execution.id)
    assert [m.role for m in rows] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool",
                                      "assistant"]
    assert [c["id"] for c in rows[2].tool_calls] == ["call-pods", "call-logs"]
    assert [(m.tool_call_id, m.tool_name) for m in rows if m.role == "tool"] == [
        ("call-pods", "k8s.get_pods"), ("call-logs", "k8s.get_logs"), ("call-events", "k8s.get_events")]
    assert 'configmap "app-config" not found' in rows[4].content
    assert sent_roles(interactions(execution.id)[-1]) == [m.role for m in rows]
    assert MCPInteraction.objects.filter(execution_id=execution.id).count() == 3


def test_unknown_tool_result_lists_the_tools_and_the_run_continues(configure):
    wrong = {"name": "k8s.describe_pod", "arguments": {"pod": "web-1"}, "id": "call-x"}
    configure({"SreAgent": [{"tool_calls": [wrong]}, {"text": FINAL}]}, strategy="native-thinking")
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    events = timeline(execution.id)
    assert [(e.event_type, e.status) for e in events] == [
        ("llm_tool_call", "completed"), ("mcp_tool_call", "failed"), ("tool_result", "completed"),
        ("final_analysis", "completed")]
    assert events[1].metadata["error_kind"] == "unknown_tool" and events[2].metadata["is_error"] is True
    assert not MCPInteraction.objects.filter(execution_id=execution.id).exists()  # nothing was called
    tool = messages(execution.id)[3]
    assert (tool.role, tool.tool_call_id) == ("tool", "call-x")
    assert "Unknown tool 'k8s.describe_pod'" in tool.content
    assert all(f"- {name}" in tool.content for name in ("k8s.get_pods", "k8s.get_logs", "k8s.get_events"))


def test_llm_error_then_recovery(configure):
    failure = {"error": {"message": "503 backend unavailable", "code": "server_error", "retryable": True}}
    configure({"SreAgent": [failure, {"text": FINAL}]}, strategy="native-thinking")
    execution = only_execution(start_session())

    first = run_next(execution.id)

    assert (first.status, first.last_interaction_failed) == (StepStatus.CONTINUE, True)
    (error,) = timeline(execution.id)
    assert (error.event_type, error.status) == ("error", "failed")
    assert error.content == "LLM error: 503 backend unavailable"
    assert roles(execution.id) == ["system", "user", "user"]
    (failed,) = interactions(execution.id)
    assert not failed.success and sent_roles(failed) == ["system", "user"]

    second = run_next(execution.id)

    assert second.status is StepStatus.COMPLETED and not second.last_interaction_failed
    assert event_types(execution.id) == ["error", "final_analysis"]
    assert sent_roles(interactions(execution.id)[1]) == ["system", "user", "user", "assistant"]


def test_two_consecutive_timeouts_fail_the_execution(configure):
    # The provider's own deadline error, then an HTTP-level timeout: both count as timeouts.
    deadline = {"error": {"message": "the LLM call did not finish before its deadline", "code": "deadline_exceeded",
                          "retryable": True}}
    http_timeout = {"error": {"message": "408 request timeout", "code": "timeout", "retryable": True}}
    configure({"SreAgent": [deadline, http_timeout]}, strategy="native-thinking")
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [(o.status, o.consecutive_timeouts) for o in outcomes] == [(StepStatus.CONTINUE, 1),
                                                                      (StepStatus.FAILED, 2)]
    execution.refresh_from_db()
    assert execution.status == "failed" and "2 consecutive timeouts" in execution.error_message
    assert [(e.event_type, e.status) for e in timeline(execution.id)] == [("error", "timed_out")] * 2


def test_a_success_resets_the_timeout_count(configure):
    deadline = {"error": {"message": "slow", "code": "deadline_exceeded", "retryable": True}}
    configure({"SreAgent": [deadline, {"tool_calls": [PODS_CALL]}, deadline, {"text": FINAL}]},
              strategy="native-thinking")
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [(o.status, o.consecutive_timeouts) for o in outcomes] == [
        (StepStatus.CONTINUE, 1), (StepStatus.CONTINUE, 0), (StepStatus.CONTINUE, 1), (StepStatus.COMPLETED, 0)]


def test_max_iterations_forces_a_conclusion(configure):
    configure({"SreAgent": [PODS_TURN, {"tool_calls": [LOGS_CALL]}, {"thinking": "Wrap up.", "text": FINAL}]},
              strategy="native-thinking", max_iterations=2)
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.CONTINUE, StepStatus.COMPLETED]
    assert AgentExecution.objects.get(id=execution.id).final_analysis == FINAL
    last_events = [(e.event_type, e.iteration) for e in timeline(execution.id)][-2:]
    assert last_events == [("llm_thinking", 3), ("final_analysis", 3)]
    rows = messages(execution.id)
    assert [(m.role, m.iteration) for m in rows[-2:]] == [("user", 3), ("assistant", 3)]
    assert "Do not call any more tools" in rows[-2].content
    forced = interactions(execution.id)[-1]
    assert (forced.interaction_type, forced.iteration, forced.success) == ("forced_conclusion", 3, True)
    assert forced.conversation[-2]["content"] == rows[-2].content


def test_max_iterations_after_a_failed_call_fails(configure):
    failure = {"error": {"message": "boom", "code": "server_error"}}
    configure({"SreAgent": [PODS_TURN, failure, {"text": FINAL}]}, strategy="native-thinking", max_iterations=2)
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.CONTINUE, StepStatus.FAILED]
    execution.refresh_from_db()
    assert execution.status == "failed" and "last LLM call failed" in execution.error_message
    assert [i.interaction_type for i in interactions(execution.id)] == ["iteration", "iteration"]
    assert event_types(execution.id)[-1] == "error" and "final_analysis" not in event_types(execution.id)


def test_thought_signature_is_stored_and_replayed(configure):
    state = {"google": {"function_call_signatures": {"call-pods": "c2lnLTE="}, "text_signature": "dHh0"}}
    configure({"SreAgent": [{**PODS_TURN, "provider_state": state}, {"text": FINAL}]}, strategy="native-thinking")
    execution = only_execution(start_session())

    run_next(execution.id)

    assistant = messages(execution.id)[2]
    assert (assistant.role, assistant.provider_state) == ("assistant", state)
    assert all(m.provider_state is None for m in messages(execution.id) if m.id != assistant.id)

    run_next(execution.id)

    second = interactions(execution.id)[1]
    assert second.conversation[2]["provider_state"] == state  # sent back with the message it belongs to
    assert "provider_state" not in second.conversation[-1]
