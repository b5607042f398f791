"""The demo investigator's proactive checks against the demo cluster: the prompt a check gets, the one call it
makes, and a verdict that follows what the cluster lists (healthy namespace → HEALTHY, failing → PROBLEM)."""

from __future__ import annotations

import json

import pytest

from agents.config.schema import SCHEDULED_CHECK_ALERT_TYPE
from agents.context import ResolvedAgentConfig, ToolResult
from agents.llm.demo import DemoProvider
from agents.llm.types import ConversationMessage, LLMRequest, LLMResponse, ToolDefinition
from agents.prompts.builder import build_native_messages, tool_response
from agents.prompts.checks import check_verdict

SERVER = "demo-kubernetes"


def _check(namespace: str) -> str:
    return json.dumps({"check": f"{namespace}-pods",
                       "instruction": f"Verify every pod in namespace {namespace} is running and ready."})


async def _run(cluster, config, alert_data: str) -> tuple[str, list[str], str]:
    tools = [ToolDefinition(name=f"{SERVER}.{t.name}", description=t.description or "", parameters=t.input_schema)
             for t in (await cluster.list_tools()).tools]
    agent = ResolvedAgentConfig(agent_name="KubernetesAgent", iteration_strategy="native-thinking",
                                llm_provider_name="demo", llm_provider=config, llm_backend="", max_iterations=5,
                                iteration_timeout=60, mcp_servers=(SERVER,))
    messages = build_native_messages(config=agent, tools=tools, alert_type=SCHEDULED_CHECK_ALERT_TYPE,
                                     alert_data=alert_data, runbook="", previous_stage_context="")
    prompt, called = messages[1].content, []
    for iteration in range(1, 5):
        request = LLMRequest(messages=list(messages), tools=tools, provider=config, iteration=iteration)
        response = LLMResponse.collect(DemoProvider().generate(request))
        messages.append(response.as_assistant_message())
        if not response.tool_calls:
            return response.text, called, prompt
        for call in response.tool_calls:
            called.append(call.name)
            result = await cluster.call_tool(call.name.split(".", 1)[1], call.arguments)
            content = ToolResult(call=call, content="".join(c.text for c in result.content), is_error=False,
                                 evidence_id=f"E{len(called)}")
            messages.append(ConversationMessage(role="tool", content=tool_response(content), tool_call_id=call.id,
                                                tool_name=call.name))
    pytest.fail("the demo investigator did not conclude the check")


async def test_a_check_of_a_healthy_namespace_is_healthy(open_cluster, demo_provider_config):
    async with open_cluster() as cluster:
        answer, called, prompt = await _run(cluster, demo_provider_config, _check("kube-system"))
    assert "## Scheduled check" in prompt and "VERDICT: HEALTHY" in prompt  # the contract is asked for
    assert called == [f"{SERVER}.pods_list_in_namespace"]
    assert check_verdict(answer) == "healthy" and "All 6 pods are running and ready" in answer


async def test_a_check_of_a_failing_namespace_names_the_failing_pods(open_cluster, demo_provider_config):
    async with open_cluster() as cluster:
        answer, _, _ = await _run(cluster, demo_provider_config, _check("shop"))
    assert check_verdict(answer) == "problem" and "2 of 6 pods are not healthy" in answer


async def test_a_check_it_cannot_verify_is_a_problem(open_cluster, demo_provider_config):
    async with open_cluster() as cluster:
        answer, _, _ = await _run(cluster, demo_provider_config, _check("no-such-namespace"))
    assert check_verdict(answer) == "problem" and "could not be verified" in answer
