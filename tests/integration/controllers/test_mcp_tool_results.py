"""What a tool call's answer becomes on its way to the LLM and the user: masked, summarized, or an error result."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controllers.base import StepStatus
from tarsy.models import AgentExecution, InteractionText, LLMInteraction, MCPInteraction, Message, TimelineEvent
from tarsy.selectors.conversations import llm_conversations
from tests.fakes.mcp_servers.k8s_server import BATCH_LOGS, LEAKED_AWS_KEY, LEAKED_PASSWORD

from .conftest import (
    SUMMARIZATION_THRESHOLD_TOKENS,
    SUMMARY_MAX_TOKENS,
    interactions,
    messages,
    only_execution,
    react_action,
    run_to_end,
    start_session,
    timeline,
)

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60),
              pytest.mark.parametrize("strategy", ["react", "native-thinking"])]

FINAL = "web-1 crashes because configmap app-config is missing."
PODS = ("k8s.get_pods", {"namespace": "prod"})
SUMMARY = "batch-0 processed 220 records normally; nothing in its logs relates to web-1."
# Events of one reply that calls a tool, before the executor's own: ReAct's Thought, then the call.
CALL_EVENTS = {"react": ["llm_thinking", "llm_tool_call"], "native-thinking": ["llm_tool_call"]}


def logs(pod: str) -> tuple[str, dict[str, str]]:
    return "k8s.get_logs", {"namespace": "prod", "pod": pod}


def script(strategy: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """One reply per tool call, then the final answer, in the strategy's format."""
    if strategy == "react":
        return [react_action(f"Call {name}.", name, json.dumps(args)) for name, args in calls] + [
            "Thought: That explains it.\nFinal Answer: " + FINAL]
    return [{"tool_calls": [{"name": name, "arguments": args, "id": f"call-{n}"}]}
            for n, (name, args) in enumerate(calls, 1)] + [{"text": FINAL}]


def tool_messages(execution_id: Any, strategy: str) -> list[Message]:
    """The messages carrying tool results: ReAct observations (user role) or native `tool` messages."""
    if strategy == "react":
        return [m for m in messages(execution_id) if m.role == "user" and m.content.startswith("Observation:")]
    return [m for m in messages(execution_id) if m.role == "tool"]


def events_of(execution_id: Any, event_type: str) -> list[TimelineEvent]:
    return [e for e in timeline(execution_id) if e.event_type == event_type]


def everything_stored(execution_id: Any) -> list[str]:
    """Every text of the execution a user, an operator or the LLM can read."""
    return [
        *(m.content for m in Message.objects.filter(execution_id=execution_id)),
        *(f"{e.content} {json.dumps(e.metadata)}" for e in TimelineEvent.objects.filter(execution_id=execution_id)),
        *(f"{r.result} {r.error_message} {json.dumps(r.arguments)}"
          for r in MCPInteraction.objects.filter(execution_id=execution_id)),
        *(json.dumps(i.conversation) for i in LLMInteraction.objects.filter(execution_id=execution_id)),
        *(t.text for t in InteractionText.objects.filter(session__executions__id=execution_id)),
    ]


def test_secrets_in_a_tool_result_are_masked_in_the_conversation_timeline_and_records(configure, strategy):
    configure({"SreAgent": script(strategy, logs("auth-0"))}, strategy=strategy)
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    stored = everything_stored(execution.id)
    for secret in (LEAKED_PASSWORD, LEAKED_AWS_KEY):
        assert not [text for text in stored if secret in text], f"{secret} is stored"
    (called,) = events_of(execution.id, "mcp_tool_call")
    (result,) = events_of(execution.id, "tool_result")
    (message,) = tool_messages(execution.id, strategy)
    (mcp,) = MCPInteraction.objects.filter(execution_id=execution.id)
    sent_back = json.dumps(interactions(execution.id)[1].conversation)  # the next request to the LLM
    for seen in (called.content, result.content, message.content, mcp.result, sent_back):
        assert "DB_PASSWORD=__MASKED_PASSWORD__" in seen and "aws_access_key_id = __MASKED_AWS_ACCESS_KEY__" in seen
        assert "connection to postgres-0:5432 refused" in seen  # only the secrets are hidden
    assert (mcp.tool, mcp.arguments, mcp.success) == ("get_logs", {"namespace": "prod", "pod": "auth-0"}, True)


def test_a_large_tool_result_reaches_the_llm_as_a_summary_and_is_kept_whole_for_debugging(configure, strategy):
    configure({"SreAgent": script(strategy, PODS, logs("batch-0")), "summarization": [SUMMARY]}, strategy=strategy)
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.CONTINUE, StepStatus.COMPLETED]
    assert AgentExecution.objects.get(id=execution.id).final_analysis == FINAL
    second = [e for e in timeline(execution.id) if e.iteration == 2]
    assert [e.event_type for e in second] == CALL_EVENTS[strategy] + ["mcp_tool_call", "mcp_tool_summary",
                                                                       "tool_result"]
    called, summary, result = second[-3:]
    masked_logs = BATCH_LOGS.replace(LEAKED_PASSWORD, "__MASKED_PASSWORD__")
    assert called.content == masked_logs  # the whole (masked) answer shows in the timeline
    tokens = len(masked_logs) // 4
    assert tokens > SUMMARIZATION_THRESHOLD_TOKENS
    assert (summary.content, summary.metadata) == (SUMMARY, {"tool_name": "get_logs", "server_name": "k8s",
                                                             "original_tokens": tokens})
    assert result.metadata["summarized"] is True
    assert result.content == (f"[Note: the result of k8s.get_logs was about {tokens} tokens, over the "
                              f"{SUMMARIZATION_THRESHOLD_TOKENS}-token limit, so it was summarized.]\n{SUMMARY}")
    assert events_of(execution.id, "tool_result")[0].metadata["summarized"] is False  # the small answer

    pods_message, logs_message = tool_messages(execution.id, strategy)
    assert "web-1  CrashLoopBackOff" in pods_message.content
    assert SUMMARY in logs_message.content and "record 0100" not in logs_message.content
    last = interactions(execution.id)[-1]
    assert (last.interaction_type, last.iteration) == ("iteration", 3)
    assert "record 0100" not in json.dumps(last.conversation) and SUMMARY in json.dumps(last.conversation)

    assert [(r.tool, r.summarized) for r in MCPInteraction.objects.filter(execution_id=execution.id)
            .order_by("iteration")] == [("get_pods", False), ("get_logs", True)]
    raw = MCPInteraction.objects.get(execution_id=execution.id, tool="get_logs")
    assert (raw.result, raw.raw_size) == (masked_logs, len(BATCH_LOGS))
    (summarizing,) = llm_conversations(list(LLMInteraction.objects.filter(execution_id=execution.id,
                                                                          interaction_type="summarization")))
    assert (summarizing.iteration, summarizing.success) == (2, True)
    asked = json.dumps(summarizing.conversation)
    assert "record 0219" in asked and "__MASKED_PASSWORD__" in asked  # the whole result, masked before it left
    assert LEAKED_PASSWORD not in asked
    assert summarizing.conversation[-1]["content"] == SUMMARY
    assert str(SUMMARY_MAX_TOKENS) in asked


def test_a_tool_error_from_the_server_is_an_error_result_and_the_run_continues(configure, strategy):
    configure({"SreAgent": script(strategy, logs("web-9"))}, strategy=strategy)
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    first = [e.event_type for e in timeline(execution.id) if e.iteration == 1]
    assert first == CALL_EVENTS[strategy] + ["mcp_tool_call", "tool_result"]
    not_found = 'pods "web-9" not found in namespace "prod"'
    (called,) = events_of(execution.id, "mcp_tool_call")
    (result,) = events_of(execution.id, "tool_result")
    assert called.metadata["is_error"] is True and not_found in called.content
    assert (result.metadata["is_error"], result.metadata["summarized"]) == (True, False)
    assert not_found in result.content
    (message,) = tool_messages(execution.id, strategy)
    assert not_found in message.content
    (mcp,) = MCPInteraction.objects.filter(execution_id=execution.id)
    assert (mcp.tool, mcp.success) == ("get_logs", False) and not_found in mcp.error_message
    assert AgentExecution.objects.get(id=execution.id).final_analysis == FINAL
