"""ReAct controller steps on real rows: what the timeline, the conversation and the debug records show."""

from __future__ import annotations

import json

import pytest

from controllers.base import StepStatus
from tarsy.models import AgentExecution, MCPInteraction, Stage

from .conftest import (
    ALERT_DATA,
    CUSTOM_INSTRUCTIONS,
    SERVER_INSTRUCTIONS,
    event_types,
    interactions,
    messages,
    only_execution,
    react_action,
    roles,
    run_next,
    run_to_end,
    sent_roles,
    start_session,
    timeline,
)

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

PODS = react_action("Check the pods first.", "k8s.get_pods", '{"namespace": "prod"}')
LOGS = react_action("web-1 is crash-looping; read its logs.", "k8s.get_logs", '{"namespace": "prod", "pod": "web-1"}')
ANSWER = "Thought: The logs name the cause.\nFinal Answer: web-1 crashes because configmap app-config is missing."
FINAL = "web-1 crashes because configmap app-config is missing."


def test_one_tool_call_then_final_answer(configure):
    configure({"SreAgent": [PODS, ANSWER]})
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    execution.refresh_from_db()
    assert (execution.status, execution.final_analysis, execution.iterations_completed) == ("completed", FINAL, 2)
    assert Stage.objects.get(id=execution.stage_id).status == "completed"
    events = timeline(execution.id)
    assert [(e.event_type, e.iteration, e.status) for e in events] == [
        ("llm_thinking", 1, "completed"), ("llm_tool_call", 1, "completed"), ("mcp_tool_call", 1, "completed"),
        ("tool_result", 1, "completed"), ("llm_thinking", 2, "completed"), ("final_analysis", 2, "completed"),
    ]
    thinking, call, _, result, thinking2, final = events
    assert thinking.content == "Check the pods first." and thinking.metadata == {"source": "react"}
    assert json.loads(call.content) == {"namespace": "prod"}
    assert call.metadata == {"tool_name": "get_pods", "server_name": "k8s",
                             "arguments": {"namespace": "prod"}, "source": "react"}
    assert "web-1  CrashLoopBackOff" in result.content and result.metadata["tool_call_id"] == "react-1"
    assert thinking2.content == "The logs name the cause."
    assert final.content == FINAL
    assert "llm_response" not in event_types(execution.id)

    rows = messages(execution.id)
    assert [(m.role, m.iteration) for m in rows] == [("system", 1), ("user", 1), ("assistant", 1), ("user", 1),
                                                     ("assistant", 2)]
    system, user, reply, observation, answer = rows
    assert SERVER_INSTRUCTIONS in system.content and CUSTOM_INSTRUCTIONS in system.content
    assert system.content.index("k8s.get_pods") < system.content.index("k8s.get_logs")
    assert ALERT_DATA in user.content
    assert reply.content == PODS and answer.content == ANSWER
    assert observation.content.startswith("Observation: Evidence [E1] (cite it as [E1]). k8s.get_pods returned the "
                                          "result below.")
    assert "web-1  CrashLoopBackOff" in observation.content
    assert all(not m.tool_calls and not m.tool_call_id for m in rows)  # ReAct never uses tool roles

    first, second = interactions(execution.id)
    assert (first.interaction_type, first.iteration, first.success) == ("iteration", 1, True)
    assert sent_roles(first) == ["system", "user", "assistant"]
    assert first.conversation[-1]["content"] == PODS
    assert first.conversation[0]["content"] == system.content
    assert sent_roles(second) == ["system", "user", "assistant", "user", "assistant"]
    assert second.conversation[3]["content"] == observation.content
    assert second.conversation[-1]["content"] == ANSWER
    assert first.input_tokens > 0 and second.input_tokens > first.input_tokens
    (mcp,) = MCPInteraction.objects.filter(execution_id=execution.id)
    assert (mcp.server, mcp.tool, mcp.arguments, mcp.iteration) == ("k8s", "get_pods", {"namespace": "prod"}, 1)
    assert mcp.success and mcp.result == result.content  # what the server answered is what the agent saw


def test_several_tool_calls_accumulate_observations(configure):
    events_call = react_action("Events too.", "k8s.get_events", "namespace: prod")  # YAML input
    configure({"SreAgent": [PODS, LOGS, events_call, ANSWER]})
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE] * 3 + [StepStatus.COMPLETED]
    assert event_types(execution.id) == ["llm_thinking", "llm_tool_call", "mcp_tool_call", "tool_result"] * 3 + [
        "llm_thinking", "final_analysis"]
    calls = [e.metadata for e in timeline(execution.id) if e.event_type == "llm_tool_call"]
    assert [(f'{c["server_name"]}.{c["tool_name"]}', c["arguments"]) for c in calls] == [
        ("k8s.get_pods", {"namespace": "prod"}), ("k8s.get_logs", {"namespace": "prod", "pod": "web-1"}),
        ("k8s.get_events", {"namespace": "prod"})]
    assert roles(execution.id) == ["system", "user"] + ["assistant", "user"] * 3 + ["assistant"]
    observations = [m.content for m in messages(execution.id)[3::2]]
    assert [o.split(" returned")[0] for o in observations] == [
        "Observation: Evidence [E1] (cite it as [E1]). k8s.get_pods",
        "Observation: Evidence [E2] (cite it as [E2]). k8s.get_logs",
        "Observation: Evidence [E3] (cite it as [E3]). k8s.get_events"]
    assert 'configmap "app-config" not found' in observations[1]
    last = interactions(execution.id)[-1]
    assert sent_roles(last) == ["system", "user"] + ["assistant", "user"] * 3 + ["assistant"]
    assert MCPInteraction.objects.filter(execution_id=execution.id).count() == 3


def test_unknown_tool_gets_the_tool_list_and_the_run_continues(configure):
    wrong = react_action("Describe the pod.", "k8s.describe_pod", '{"pod": "web-1"}')
    configure({"SreAgent": [wrong, ANSWER]})
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    events = timeline(execution.id)
    assert [(e.event_type, e.status) for e in events] == [
        ("llm_thinking", "completed"), ("error", "failed"), ("llm_thinking", "completed"),
        ("final_analysis", "completed")]
    assert "k8s.describe_pod" in events[1].content and events[1].metadata["reason"] == "unknown_tool"
    assert not MCPInteraction.objects.filter(execution_id=execution.id).exists()  # nothing was called
    rows = messages(execution.id)
    assert [m.role for m in rows] == ["system", "user", "assistant", "user", "assistant"]
    observation = rows[3].content
    assert observation.startswith("Observation: Error - Unknown tool 'k8s.describe_pod'.")
    for name, description in [("k8s.get_pods", "List the pods of a namespace"), ("k8s.get_logs", "Logs of one pod"),
                              ("k8s.get_events", "Events of a namespace")]:
        assert f"  - {name}: {description}" in observation
    assert interactions(execution.id)[1].conversation[3]["content"] == observation


def test_malformed_reply_is_kept_and_followed_by_format_feedback(configure):
    rambling = "I think the pod is broken, maybe I should look at the pods."
    configure({"SreAgent": [rambling, PODS, ANSWER]})
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.CONTINUE, StepStatus.COMPLETED]
    events = timeline(execution.id)
    assert [(e.event_type, e.iteration) for e in events][:2] == [("llm_thinking", 1), ("error", 1)]
    assert events[0].content == rambling
    assert events[1].content.startswith("FORMAT ERROR: Your response has neither 'Action:' nor 'Final Answer:'")
    assert events[1].metadata == {"source": "react", "reason": "malformed"}
    rows = messages(execution.id)
    assert [(m.role, m.iteration) for m in rows[:4]] == [("system", 1), ("user", 1), ("assistant", 1), ("user", 1)]
    assert rows[2].content == rambling  # the malformed reply stays in the conversation
    assert rows[3].content.startswith("FORMAT ERROR:") and "Action Input: <JSON object" in rows[3].content
    second = interactions(execution.id)[1]
    assert [m["content"] for m in second.conversation[2:4]] == [rambling, rows[3].content]
    assert AgentExecution.objects.get(id=execution.id).final_analysis == FINAL


def test_reply_without_thought_never_leaves_an_empty_event(configure):
    bare_action = 'Action: k8s.get_pods\nAction Input: {"namespace": "prod"}'
    configure({"SreAgent": [bare_action, "Final Answer: " + FINAL]})
    execution = only_execution(start_session())

    run_to_end(execution.id)

    events = timeline(execution.id)
    assert [e.event_type for e in events] == ["llm_tool_call", "mcp_tool_call", "tool_result", "final_analysis"]
    assert all(e.content and e.status == "completed" for e in events)
    assert events[-1].content == FINAL


def test_llm_error_then_recovery(configure):
    failure = {"error": {"message": "upstream overloaded", "code": "server_error", "retryable": True}}
    configure({"SreAgent": [failure, ANSWER]})
    execution = only_execution(start_session())

    first = run_next(execution.id)

    assert (first.status, first.last_interaction_failed, first.consecutive_timeouts) == (
        StepStatus.CONTINUE, True, 0)
    execution.refresh_from_db()
    assert (execution.last_interaction_failed, execution.status) == (True, "active")
    (error,) = timeline(execution.id)
    assert (error.event_type, error.status, error.content) == ("error", "failed", "LLM error: upstream overloaded")
    assert error.metadata == {"code": "server_error", "retryable": True}
    assert roles(execution.id) == ["system", "user", "user"]
    assert "upstream overloaded" in messages(execution.id)[2].content
    (failed,) = interactions(execution.id)
    assert (failed.success, failed.error_message) == (False, "upstream overloaded")
    assert sent_roles(failed) == ["system", "user"]  # what was sent; no reply to add (EP-0014)

    second = run_next(execution.id)

    assert second.status is StepStatus.COMPLETED
    execution.refresh_from_db()
    assert (execution.status, execution.last_interaction_failed) == ("completed", False)
    assert event_types(execution.id) == ["error", "llm_thinking", "final_analysis"]
    recovered = interactions(execution.id)[1]
    assert recovered.success and sent_roles(recovered) == ["system", "user", "user", "assistant"]


def test_two_consecutive_timeouts_fail_the_execution(configure):
    # Each call streams for 3 s but the iteration has 0.4 s: the provider gives up at the deadline.
    configure({"SreAgent": [{"text": PODS, "latency_ms": 3000}]}, iteration_timeout="400ms", chunk_size=8)
    execution = only_execution(start_session())

    first = run_next(execution.id)

    assert (first.status, first.consecutive_timeouts, first.last_interaction_failed) == (
        StepStatus.CONTINUE, 1, True)
    assert AgentExecution.objects.get(id=execution.id).consecutive_timeouts == 1

    second = run_next(execution.id)

    assert (second.status, second.consecutive_timeouts) == (StepStatus.FAILED, 2)
    execution.refresh_from_db()
    assert execution.status == "failed" and "2 consecutive timeouts" in execution.error_message
    events = timeline(execution.id)
    errors = [e for e in events if e.event_type == "error"]
    assert [(e.status, e.iteration, e.metadata["code"]) for e in errors] == [
        ("timed_out", 1, "deadline_exceeded"), ("timed_out", 2, "deadline_exceeded")]
    partial = [e for e in events if e.event_type == "llm_thinking"]
    assert partial and all(e.status == "failed" for e in partial)  # what streamed before the deadline
    assert [i.success for i in interactions(execution.id)] == [False, False]


def test_max_iterations_forces_a_conclusion_without_tools(configure):
    forced = "Thought: Enough evidence.\nFinal Answer: Most likely the missing configmap app-config."
    configure({"SreAgent": [PODS, LOGS, forced]}, max_iterations=2)
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.CONTINUE, StepStatus.COMPLETED]
    execution.refresh_from_db()
    assert (execution.status, execution.final_analysis) == ("completed", "Most likely the missing configmap "
                                                                         "app-config.")
    assert event_types(execution.id)[-2:] == ["llm_thinking", "final_analysis"]
    rows = messages(execution.id)
    prompt = rows[-2]
    assert (prompt.role, prompt.iteration) == ("user", 3)
    assert "Final Answer:" in prompt.content and "Do not call any more tools" in prompt.content
    assert (rows[-1].role, rows[-1].content) == ("assistant", forced)
    last = interactions(execution.id)[-1]
    assert (last.interaction_type, last.iteration, last.success) == ("forced_conclusion", 3, True)
    assert last.conversation[-2]["content"] == prompt.content
    assert [i.interaction_type for i in interactions(execution.id)] == ["iteration", "iteration",
                                                                        "forced_conclusion"]


def test_max_iterations_after_a_failed_call_fails(configure):
    failure = {"error": {"message": "quota exhausted", "code": "rate_limit", "retryable": True}}
    configure({"SreAgent": [PODS, failure, ANSWER]}, max_iterations=2)
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.CONTINUE, StepStatus.FAILED]
    execution.refresh_from_db()
    assert execution.status == "failed"
    assert "maximum of 2 iterations and the last LLM call failed" in execution.error_message
    last = timeline(execution.id)[-1]
    assert (last.event_type, last.iteration, last.metadata) == ("error", 3, {"max_iterations": True})
    assert len(interactions(execution.id)) == 2  # no forced-conclusion call was made
    assert "final_analysis" not in event_types(execution.id)
