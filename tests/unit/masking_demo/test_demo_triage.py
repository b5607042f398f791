"""The demo metrics server and the demo investigator as a metrics agent and as an orchestrator (the built-in
`triage` chain's parts), driven through the real MCP client and the demo provider."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from agents.citations import Evidence, verify_citations
from agents.context import ToolResult
from agents.llm.demo import DemoProvider
from agents.llm.types import ConversationMessage, LLMRequest, LLMResponse, ToolCall, ToolDefinition
from agents.mcp import demo_cluster_data as data
from agents.mcp.demo_metrics import build_server as build_metrics
from agents.prompts.builder import format_observation, tool_response

SERVERS = {"demo-kubernetes": None, "demo-metrics": None}
MAX_ITERATIONS = 10


async def _definitions(clients: dict[str, Client]) -> list[ToolDefinition]:
    return [ToolDefinition(name=f"{server}.{t.name}", description=t.description or "", parameters=t.input_schema)
            for server, client in clients.items() for t in (await client.list_tools()).tools]


async def _call(clients: dict[str, Client], name: str, arguments: dict) -> tuple[str, bool]:
    server, _, tool = name.partition(".")
    result = await clients[server].call_tool(tool, arguments)
    return "".join(c.text for c in result.content), bool(result.is_error)


async def _investigate(clients, config, alert: str, native: bool) -> tuple[str, int]:
    tools = await _definitions(clients)
    system = "You are an SRE agent." + ("" if native else "\nTools:\n" + "\n".join(f"- {t.name}" for t in tools))
    messages = [ConversationMessage(role="system", content=system), ConversationMessage(role="user", content=alert)]
    calls = 0
    for iteration in range(1, MAX_ITERATIONS + 1):
        request = LLMRequest(messages=list(messages), tools=tools if native else [], provider=config,
                             interaction_type="iteration", iteration=iteration)
        response = LLMResponse.collect(DemoProvider().generate(request))
        if native:
            messages.append(response.as_assistant_message())
            if not response.tool_calls:
                return response.text, calls
            pending = [(call, call.name, call.arguments) for call in response.tool_calls]
        else:
            messages.append(ConversationMessage(role="assistant", content=response.text))
            if "Final Answer:" in response.text:
                return response.text.split("Final Answer:", 1)[1], calls
            action = response.text.split("Action: ", 1)[1]
            name, _, raw = action.partition("\nAction Input: ")
            call = ToolCall(id=f"react-{iteration}", name=name.strip(), arguments=json.loads(raw))
            pending = [(call, call.name, call.arguments)]
        for call, name, arguments in pending:
            calls += 1
            text, is_error = await _call(clients, name, arguments)
            result = ToolResult(call=call, content=text, is_error=is_error, evidence_id=f"E{calls}")
            messages.append(ConversationMessage(role="tool", content=tool_response(result), tool_call_id=call.id,
                                                tool_name=call.name) if native else
                            ConversationMessage(role="user", content=format_observation(result)))
    pytest.fail("the demo investigator did not conclude")


async def test_demo_metrics_answer_like_prometheus_and_refuse_what_they_cannot_evaluate():
    async with Client(build_metrics()) as metrics:
        names = json.loads((await metrics.call_tool("list_metrics", {})).content[0].text)
        assert "container_memory_working_set_bytes" in names
        query = f'kube_pod_container_status_last_terminated_reason{{namespace="shop", pod="{data.DB_POD}"}}'
        answer = json.loads((await metrics.call_tool("execute_query", {"query": query})).content[0].text)
        assert answer["resultType"] == "vector"
        assert answer["result"][0]["metric"]["reason"] == "OOMKilled"
        bad = await metrics.call_tool("execute_query", {"query": "sum(up) by (job"})
        assert bad.is_error and "bad_data" in bad.content[0].text


@pytest.mark.parametrize("native", [True, False], ids=["native", "react"])
async def test_the_demo_metrics_agent_finds_cpu_throttling_and_cites_each_query(demo_provider_config, native):
    from agents.mcp.demo_cluster import build_server as build_cluster

    alert = f"Alert: KubePodCrashLooping\nnamespace: search\npod: {data.THROTTLED_POD}"
    async with Client(build_cluster()) as cluster, Client(build_metrics()) as metrics:
        report, calls = await _investigate({"demo-kubernetes": cluster, "demo-metrics": metrics},
                                           demo_provider_config, alert, native)
    root_cause = next(line for line in report.splitlines() if line.startswith("**Root cause:**"))
    assert "starved of CPU" in root_cause and "92%" in root_cause and "250m" in root_cause, root_cause
    citations = verify_citations(report, [Evidence(id=f"E{n}", event_id=n) for n in range(1, calls + 1)], alert)
    assert citations["invalid"] == [] and citations["uncited"] == [], citations


def _orchestrator_request(config, messages, native: bool) -> LLMRequest:
    tools = [ToolDefinition(name=f"tarsy.{name}", description=name) for name in ("dispatch_agent", "list_agents")]
    system = "You lead." + ("" if native else "\nTools:\n- tarsy.dispatch_agent\n- tarsy.list_agents")
    return LLMRequest(messages=[ConversationMessage(role="system", content=system), *messages],
                      tools=tools if native else [], provider=config, interaction_type="iteration", iteration=1)


def _reply(config, history) -> LLMResponse:
    return LLMResponse.collect(DemoProvider().generate(_orchestrator_request(config, history, True)))


def test_the_demo_orchestrator_dispatches_both_agents_at_once_then_cites_both_results(demo_provider_config):
    alert = ConversationMessage(role="user", content="Alert: KubePodCrashLooping\nnamespace: search\npod: x-1")
    first = _reply(demo_provider_config, [alert])
    assert [c.name for c in first.tool_calls] == ["tarsy.list_agents"]
    catalog = {"agents": [{"agent": "KubernetesAgent", "description": "Investigates Kubernetes alerts"},
                          {"agent": "PrometheusAgent", "description": "Investigates metric alerts"}]}
    listing = ToolResult(call=first.tool_calls[0], content=json.dumps(catalog))
    history = [alert, first.as_assistant_message(), ConversationMessage(
        role="tool", content=tool_response(listing), tool_call_id=first.tool_calls[0].id,
        tool_name="tarsy.list_agents")]
    second = _reply(demo_provider_config, history)
    assert [c.arguments["agent"] for c in second.tool_calls] == ["KubernetesAgent", "PrometheusAgent"]
    assert "pod `x-1`" in second.tool_calls[0].arguments["task"]
    history.append(second.as_assistant_message())
    for n, call in enumerate(second.tool_calls, 1):
        accepted = {"execution_id": f"id-{n}", "agent": call.arguments["agent"], "status": "accepted"}
        history.append(ConversationMessage(role="tool", content=tool_response(ToolResult(
            call=call, content=json.dumps(accepted))), tool_call_id=call.id, tool_name=call.name))
    history.append(ConversationMessage(role="user", content=(
        "Result of sub-agent PrometheusAgent (execution_id id-2): completed.\n\n**Root cause:** CPU starved [E4].\n\n"
        "Its tool results, citable in your analysis: evidence [E4] (execute_query)")))
    waiting = _reply(demo_provider_config, history)
    assert [c.name for c in waiting.tool_calls] == ["tarsy.list_agents"]  # waits: KubernetesAgent is still out
    history += [waiting.as_assistant_message(), ConversationMessage(
        role="tool", content=tool_response(ToolResult(call=waiting.tool_calls[0], content=json.dumps(catalog))),
        tool_call_id=waiting.tool_calls[0].id, tool_name="tarsy.list_agents"), ConversationMessage(
        role="user", content=("Result of sub-agent KubernetesAgent (execution_id id-1): completed.\n\n**Root cause:** "
                              "liveness probe kills it [E1][E2].\n\nIts tool results, citable in your analysis: "
                              "evidence [E1] (pods_list); evidence [E2] (pods_get)"))]
    final = _reply(demo_provider_config, history)
    assert not final.tool_calls
    root_cause = next(line for line in final.text.splitlines() if line.startswith("**Root cause:**"))
    assert root_cause == "**Root cause:** liveness probe kills it [E1][E2]."  # the first dispatched leads
    assert "**PrometheusAgent**: CPU starved [E4]" in final.text


def test_a_react_demo_orchestrator_dispatches_one_agent_per_reply_then_waits_calling_nothing(demo_provider_config):
    def reply(history) -> str:
        return LLMResponse.collect(DemoProvider().generate(_orchestrator_request(demo_provider_config, history,
                                                                                 False))).text

    history = [ConversationMessage(role="user", content="Alert: KubePodCrashLooping\nnamespace: shop\npod: x-1")]
    steps = [json.dumps({"agents": [{"agent": "A", "description": "Reads pods"},
                                    {"agent": "B", "description": "Reads metrics"}]}),
             json.dumps({"execution_id": "id-1", "agent": "A", "status": "accepted"}),
             json.dumps({"execution_id": "id-2", "agent": "B", "status": "accepted"})]
    actions = []
    for n, content in enumerate(steps, 1):
        text = reply(history)
        action, _, raw = text.split("Action: ", 1)[1].partition("\nAction Input: ")
        actions.append((action, json.loads(raw).get("agent")))
        call = ToolCall(id=f"react-{n}", name="tarsy.x", arguments={})
        history += [ConversationMessage(role="assistant", content=text),
                    ConversationMessage(role="user", content=format_observation(ToolResult(call=call,
                                                                                          content=content)))]
    assert actions == [("tarsy.list_agents", None), ("tarsy.dispatch_agent", "A"), ("tarsy.dispatch_agent", "B")]
    waiting = reply(history)
    assert "Action:" not in waiting and "Final Answer:" not in waiting
