"""The demo provider as action agent, scorer and reflector (#45): it proposes the fix a determined cause points at and
nothing on a guess; it scores and learns only from evidence the session holds."""

from __future__ import annotations

import json
import re

import pytest
from mcp import Client

from agents.config.schema import LLMProviderConfig
from agents.context import ResolvedAgentConfig, ToolResult
from agents.llm.demo import DemoProvider
from agents.llm.types import ConversationMessage, LLMRequest, LLMResponse, ToolDefinition
from agents.mcp import demo_cluster_writes as writes
from agents.mcp.demo_cluster import ACTIONS_SERVER_NAME, build_server
from agents.memory.reflection import parse_memories, reflection_messages
from agents.prompts.builder import build_native_messages, tool_response
from agents.prompts.stage_context import format_stage_analysis

from .test_demo_reads_the_alert import _investigate

CONFIG = LLMProviderConfig(type="demo")


pytestmark = pytest.mark.usefixtures("demo_cluster_changes")


def _resolved() -> ResolvedAgentConfig:
    return ResolvedAgentConfig(agent_name="RemediationAgent", iteration_strategy="native", llm_provider_name="demo",
                               llm_provider=CONFIG, llm_backend="demo", max_iterations=20, iteration_timeout=60,
                               mcp_servers=(ACTIONS_SERVER_NAME,))


async def _remediate(analysis: str, decision: str = "") -> tuple[list, str]:
    """The remediation agent's calls on the actions server (proposals are not run), and its report once
    `decision` (a decision message) is in the conversation."""
    async with Client(build_server(actions=True)) as cluster:
        tools = [ToolDefinition(name=f"{ACTIONS_SERVER_NAME}.{t.name}", description=t.description or "",
                                parameters=t.input_schema) for t in (await cluster.list_tools()).tools]
        messages = build_native_messages(config=_resolved(), tools=tools, alert_type="kubernetes",
                                         alert_data="orders-db unhealthy", runbook="",
                                         previous_stage_context=format_stage_analysis("analysis", analysis))
        calls = []
        for iteration in range(1, 6):
            request = LLMRequest(messages=list(messages), tools=tools, provider=CONFIG, iteration=iteration)
            response = LLMResponse.collect(DemoProvider().generate(request))
            messages.append(response.as_assistant_message())
            if not response.tool_calls:
                return calls, response.text
            for call in response.tool_calls:
                calls.append(call)
                if call.name.endswith(tuple(writes.WRITE_TOOLS)):
                    text = "Proposed; it has NOT run. A person approves or rejects it."
                else:
                    result = await cluster.call_tool(call.name.split(".", 1)[1], call.arguments)
                    text = "".join(c.text for c in result.content)
                result = ToolResult(call=call, content=text, is_error=False, evidence_id=f"E{20 + len(calls)}")
                messages.append(ConversationMessage(role="tool", content=tool_response(result), tool_call_id=call.id,
                                                    tool_name=call.name))
            if decision and any(c.name.endswith("resources_set_limits") for c in response.tool_calls):
                messages.append(ConversationMessage(role="user", content=decision))
    pytest.fail("the remediation did not conclude")


async def test_nothing_is_proposed_for_a_stand_in_cause_or_a_healthy_subject(open_cluster):
    async with open_cluster() as cluster:
        stand_in, _ = await _investigate(cluster, CONFIG, "pod checkout-7c9d-abcde CrashLoopBackOff in namespace shop")
        healthy, _ = await _investigate(cluster, CONFIG, "pod cart-5f6d8c9b7-qt9wz high latency")
    for analysis, why in ((stand_in, "did not determine the cause"), (healthy, "nothing to fix")):
        calls, report = await _remediate(analysis)
        assert not [c for c in calls if c.name.endswith(tuple(writes.WRITE_TOOLS))], calls
        assert "**Action:** none proposed: " in report and why in report
        assert report.count("**Root cause:**") == 1


async def test_the_oom_killed_database_gets_a_memory_limit_proposal_citing_real_evidence_then_a_verified_report(
        open_cluster):
    async with open_cluster() as cluster:
        analysis, _ = await _investigate(cluster, CONFIG, "orders-db unhealthy")
    decision = ("Action 7 (demo-kubernetes-actions.resources_set_limits {}) was approved by api-client and ran "
                "(evidence E24, E25). Outcome: verified: demo-kubernetes-actions.resources_get shows "
                "'readyReplicas: 1'.\nResult: statefulset.apps/orders-db limits set to memory 512Mi")
    calls, report = await _remediate(analysis, decision)

    read, proposal = calls[0], calls[1]
    assert read.name.endswith("resources_get") and read.arguments["name"] == "orders-db"
    assert proposal.name.endswith("resources_set_limits")
    assert {k: proposal.arguments[k] for k in ("kind", "name", "namespace", "memory")} == {
        "kind": "StatefulSet", "name": "orders-db", "namespace": "shop", "memory": "512Mi"}
    cited = re.findall(r"\[E\d+\]", analysis.split("**Root cause:**")[1].split("\n")[0])
    assert cited and all(c in proposal.arguments["_justification"] for c in cited)
    assert "[E21]" in proposal.arguments["_justification"]  # the read it made just before
    assert proposal.arguments["_verify"]["expect"] == "readyReplicas: 1"
    root = next(line for line in analysis.splitlines() if line.startswith("**Root cause:**"))
    assert root in report  # the investigation's cause, word for word
    assert ("**Action:** `resources_set_limits` memory `512Mi` on StatefulSet `orders-db` (namespace `shop`): "
            "approved by api-client, ran and verified: the read shows 'readyReplicas: 1' [E24][E25]") in report


def _reflection(analysis: str, evidence: list[tuple[str, str]], review: dict | None = None) -> list:
    results = [{"evidence_id": i, "tool": "demo-kubernetes.pods_get", "content": c, "is_error": False}
               for i, c in evidence]
    messages = reflection_messages(alert_type="kubernetes", alert_data="orders-db unhealthy", final_analysis=analysis,
                                   results=results, review=review, max_memories=5)
    request = LLMRequest(messages=messages, provider=CONFIG, interaction_type="memory_reflection")
    memories, problem = parse_memories(LLMResponse.collect(DemoProvider().generate(request)).text, 5)
    assert problem == ""
    return memories


async def test_reflection_learns_only_from_evidence_the_session_holds(open_cluster):
    async with open_cluster() as cluster:
        analysis, _ = await _investigate(cluster, CONFIG, "orders-db unhealthy")
        stand_in, _ = await _investigate(cluster, CONFIG, "pod checkout-7c9d-abcde CrashLoopBackOff in namespace shop")
    evidence = [(f"E{n}", "pod yaml") for n in range(1, 7)]

    assert _reflection(analysis, []) == []  # the alert and the analysis alone teach nothing
    assert _reflection(analysis, evidence, {"rating": "inaccurate", "feedback": "wrong pod"}) == []
    assert _reflection(stand_in, evidence) == []  # a cause not determined is no incident to remember
    [memory] = _reflection(analysis, evidence[:2], {"rating": "accurate"})
    assert memory.kind == "incident" and memory.labels == {"namespace": "shop", "service": "orders-db"}
    assert memory.evidence_ids and set(memory.evidence_ids) <= {"E1", "E2"}
    assert "orders-db-0" in memory.text and "OOMKilled" in memory.text and "256Mi" in memory.text


def test_scoring_by_rule_rests_on_the_sessions_evidence():
    from tarsy.pipeline.scoring.prompt import scoring_messages
    from tarsy.pipeline.scoring.rubric import parse_verdict

    analysis = "## Root cause analysis\n\n**Root cause:** `orders-db-0` is **OOMKilled** [E1][E2].\n\n" \
               "### Recommended actions\n1. Raise its memory limit."

    def verdict(results):
        messages = scoring_messages(alert_type="kubernetes", alert_data="x", final_analysis=analysis, results=results,
                                    signals={})
        request = LLMRequest(messages=messages, provider=CONFIG, interaction_type="scoring")
        return parse_verdict(LLMResponse.collect(DemoProvider().generate(request)).text)

    held = [{"evidence_id": f"E{n}", "tool": "t", "content": "c", "is_error": False} for n in (1, 2)]
    assert (verdict(held).support, verdict(held).score) == ("supported", 85)
    nothing = verdict([])
    assert nothing.support == "unsupported" and "no_tool_evidence" in nothing.tags
    assert "invalid_citation" in verdict(held[:1]).tags
    assert json.loads(json.dumps(nothing.model_dump()))["rationale"].endswith("(Rule-based, by the built-in demo "
                                                                              "provider.)")


async def test_a_recalled_memory_about_the_workload_is_checked_against_the_cluster_and_others_are_left_out(
        open_cluster):
    from agents.memory.prompt import Recalled, memories_block

    from .test_demo_provider import _definitions, _request, _tool_text
    from .test_demo_reads_the_alert import _config

    memories, _flagged = memories_block([
        Recalled(memory_id=4, kind="incident", text="cart in namespace shop: cart-5f6d8c9b7-qt9wz was OOMKilled at "
                 "128Mi. Fixed by resources_set_limits memory 256Mi, approved and verified.", confidence=0.6,
                 age_days=2, use_count=1, session_id="s1"),
        Recalled(memory_id=5, kind="incident", text="search-api in namespace search: throttled at 250m.",
                 confidence=0.6, age_days=2, use_count=1, session_id="s2")])
    async with open_cluster() as cluster:
        tools = await _definitions(cluster)
        messages = build_native_messages(config=_config(CONFIG), tools=tools, alert_type="kubernetes",
                                         alert_data="pod cart-5f6d8c9b7-qt9wz high latency", runbook="",
                                         previous_stage_context="", memories=memories)
        for iteration in range(1, 9):
            response = LLMResponse.collect(DemoProvider().generate(_request(messages, CONFIG, tools,
                                                                            iteration=iteration)))
            messages.append(response.as_assistant_message())
            if not response.tool_calls:
                break
            for n, call in enumerate(response.tool_calls, 1):
                text, is_error = await _tool_text(cluster, call.name, call.arguments)
                result = ToolResult(call=call, content=text, is_error=is_error, evidence_id=f"E{iteration}{n}")
                messages.append(ConversationMessage(role="tool", content=tool_response(result), tool_call_id=call.id,
                                                    tool_name=call.name))
    report = response.text
    assert "**Recalled from past investigations** (checked against the cluster: `cart-5f6d8c9b7-qt9wz` is healthy " \
           "now" in report
    assert "[M4] incident: cart in namespace shop" in report and "[M5]" not in report  # not about this workload
    cause = next(line for line in report.splitlines() if line.startswith("**Root cause:**"))
    assert "not visible in the demo cluster" in cause and "memory M4 of a past investigation recalls" in cause
