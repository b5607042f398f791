"""The demo investigator starts from what the alert names, says what the demo cluster lacks, reasons from tool
output, and answers the chat question asked."""

from __future__ import annotations

import json

import pytest

from agents.context import ChatContext, ResolvedAgentConfig, ToolResult
from agents.llm.demo import DemoProvider, executive_summary
from agents.llm.demo.alert import parse_alert
from agents.llm.types import ConversationMessage, LLMResponse, ToolCall
from agents.mcp import demo_cluster_data as data
from agents.prompts.builder import build_native_messages, build_react_messages, tool_response

from .test_demo_provider import _definitions, _request, _tool_text

ALERTMANAGER = json.dumps({
    "receiver": "sre", "status": "firing",
    "commonLabels": {"alertname": "KubePodNotReady", "namespace": "inventory"},
    "alerts": [{"status": "firing", "labels": {"alertname": "KubePodNotReady", "namespace": "inventory",
                                               "pod": data.NOT_READY_POD},
                "annotations": {"summary": "Pod has been in a non-ready state for more than 15 minutes."}}],
})
# alert → what the root cause line must say (the named resource and its own cause)
NAMED = {
    ALERTMANAGER: (data.NOT_READY_POD, "stock-cache", "no such host", "no Service `stock-cache`"),
    f"alertname: CPUThrottlingHigh\nnamespace: search\npod: {data.THROTTLED_POD}\nseverity: info":
        (data.THROTTLED_POD, "CPU-throttled", data.THROTTLED_CPU_LIMIT, "probes time out"),
    "deployment report-api in namespace analytics has unavailable replicas":
        (data.BAD_TAG_POD, "ImagePullBackOff", data.BAD_IMAGE, "does not exist in the registry"),
    "billing: invoice-worker pods are not starting": (data.MISSING_SECRET_POD, data.MISSING_SECRET, "does not exist"),
    json.dumps({"alertname": "KubeNodeDiskPressure", "node": data.PRESSURED_NODE}):
        (data.PRESSURED_NODE, "DiskPressure=True", data.EVICTED_POD, "41Gi"),
    "orders-db unhealthy": (data.DB_POD, "OOMKilled", data.DB_MEMORY_LIMIT),
}


def _config(provider_config) -> ResolvedAgentConfig:
    return ResolvedAgentConfig(agent_name="KubernetesAgent", iteration_strategy="native", llm_provider_name="demo",
                               llm_provider=provider_config, llm_backend="demo", max_iterations=20,
                               iteration_timeout=60, mcp_servers=("demo-kubernetes",))


def _renamed(text: str, renames: dict[str, str]) -> str:
    for old, new in renames.items():
        text = text.replace(old, new)
    return text


async def _investigate(cluster, config, alert: str, renames: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """A native investigation built by the real prompt builder; `renames` rename names in every tool result
    (and back in the arguments the investigator sends)."""
    renames = renames or {}
    back = {new: old for old, new in renames.items()}
    tools = await _definitions(cluster)
    messages = build_native_messages(config=_config(config), tools=tools, alert_type="kubernetes",
                                     alert_data=alert, runbook="", previous_stage_context="")
    called: list[str] = []
    for iteration in range(1, 9):
        response = LLMResponse.collect(DemoProvider().generate(_request(messages, config, tools, iteration=iteration)))
        messages.append(response.as_assistant_message())
        if not response.tool_calls:
            return response.text, called
        for call in response.tool_calls:
            called.append(call.name.split(".", 1)[1])
            arguments = json.loads(_renamed(json.dumps(call.arguments), back))
            text, is_error = await _tool_text(cluster, call.name, arguments)
            content = _renamed(("Error: " if is_error else "") + text, renames)
            result = ToolResult(call=call, content=content, is_error=is_error, evidence_id=f"E{len(called)}")
            messages.append(ConversationMessage(role="tool", content=tool_response(result), tool_call_id=call.id,
                                                tool_name=call.name))
    pytest.fail("the demo investigator did not conclude")


def _root_cause(answer: str) -> str:
    return next(line for line in answer.splitlines() if line.startswith("**Root cause:**"))


async def test_alerts_naming_different_resources_get_different_analyses(open_cluster, demo_provider_config):
    causes = {}
    async with open_cluster() as cluster:
        for alert, facts in NAMED.items():
            answer, called = await _investigate(cluster, demo_provider_config, alert)
            cause = _root_cause(answer)
            assert all(fact in cause for fact in facts), (alert, cause)
            assert "not found:**" not in answer, answer  # everything these alerts name is in the demo cluster
            causes[alert] = cause
            assert len(called) <= 7, called

    assert len(set(causes.values())) == len(NAMED)
    assert data.CRASHING_POD not in causes["orders-db unhealthy"]  # the database itself, not the web pod


async def test_an_alert_naming_a_pod_the_cluster_lacks_says_so(open_cluster, demo_provider_config):
    async with open_cluster() as cluster:
        answer, _ = await _investigate(cluster, demo_provider_config, "pod web-1 CrashLoopBackOff")
        elsewhere, _ = await _investigate(cluster, demo_provider_config,
                                          "KubePodCrashLooping namespace: payments pod: api-7f9c-x2x")

    assert "the demo cluster has no pod `web-1` in any namespace" in answer
    assert "failing workloads show" in answer and data.EVICTED_POD in answer  # what the cluster does have
    assert data.CRASHING_POD in _root_cause(answer)  # the failing pod that fits "CrashLoopBackOff"
    assert "no pods in namespace `payments`" in elsewhere and "no pod `api-7f9c-x2x` in namespace `payments`" \
        in elsewhere


async def test_a_healthy_named_pod_or_node_is_reported_healthy_not_replaced(open_cluster, demo_provider_config):
    async with open_cluster() as cluster:
        answer, _ = await _investigate(cluster, demo_provider_config, "pod cart-5f6d8c9b7-qt9wz high latency")

        node, called = await _investigate(cluster, demo_provider_config, "KubeNodeNotReady node: control-plane")

    cause = _root_cause(answer)
    assert "not visible in the demo cluster" in cause and "cart-5f6d8c9b7-qt9wz" in cause
    assert "OOMKilled" not in cause
    assert "node `control-plane` reports all conditions healthy" in _root_cause(node)
    assert "not visible in the demo cluster now; none of its pods is failing" in _root_cause(node)
    assert called == ["resources_get", "pods_list", "events_list"]  # a node alert reads the node first


async def test_a_healthy_node_is_the_answer_not_a_failing_pod_on_it(open_cluster, demo_provider_config):
    """#45: for "node worker-2 NotReady" the analysis found the node healthy and the summary blamed orders-db-0."""
    async with open_cluster() as cluster:
        answer, called = await _investigate(cluster, demo_provider_config, "node worker-2 NotReady")

    cause, summary = _root_cause(answer), executive_summary(answer)
    assert called[0] == "resources_get"
    assert cause.startswith("**Root cause:** node `worker-2` reports all conditions healthy")
    assert "which a node problem does not explain" in cause
    assert "OOMKilled" not in cause and "OOMKilled" not in summary
    assert summary.startswith("Root cause: node worker-2 reports all conditions healthy")


async def test_a_pagerduty_title_is_read_and_a_missing_workload_is_said_in_the_summary(open_cluster,
                                                                                       demo_provider_config):
    """#45: a PagerDuty incident titled "analytics-etl pods not starting in namespace analytics after deploy" was
    blamed on a DNS problem in inventory-api; the namespace's own failure is report-api's bad image."""
    alert = json.dumps({"source": "pagerduty", "event_type": "incident.triggered", "incident": {
        "id": "PGR0VU2", "type": "incident", "title": "analytics-etl pods not starting in namespace analytics after "
        "deploy", "service": {"summary": "API Service", "id": "PF9KMXH"}, "urgency": "high"}})
    async with open_cluster() as cluster:
        answer, _ = await _investigate(cluster, demo_provider_config, alert)

    cause, summary = _root_cause(answer), executive_summary(answer)
    assert "no workload `analytics-etl` in namespace `analytics`" in cause
    assert "namespace `analytics`'s own failure instead" in cause and data.BAD_TAG_POD in cause
    assert "inventory" not in cause
    assert "no workload analytics-etl in namespace analytics" in summary and data.BAD_TAG_POD in summary


async def test_a_missing_pod_is_said_in_the_summary_before_any_other_cause(open_cluster, demo_provider_config):
    """#45: for a pod the cluster lacks the summary said "Root cause: orders-db-0 is being OOMKilled"."""
    async with open_cluster() as cluster:
        answer, _ = await _investigate(cluster, demo_provider_config, "pod checkout-7c9d-abcde CrashLoopBackOff in "
                                                                      "namespace shop")

    summary = executive_summary(answer)
    assert summary.startswith("Root cause: undetermined for what the alert names (the demo cluster has no pod "
                              "checkout-7c9d-abcde in namespace shop); namespace shop's own failure instead: "), summary


async def test_conclusions_follow_the_tool_output_not_pod_names(open_cluster, demo_provider_config):
    """Renamed in every tool result, the throttled pod and the missing Secret are still diagnosed the same way."""
    rename = {"search-api": "catalog-fe", "invoice-smtp": "mailer"}

    async with open_cluster() as cluster:
        throttled, _ = await _investigate(cluster, demo_provider_config,
                                          "CPUThrottlingHigh pod: catalog-fe-6d8f9b7c5-h4n8q namespace: search", rename)
        secret, _ = await _investigate(cluster, demo_provider_config, "invoice-worker not starting in billing", rename)

    assert "`catalog-fe-6d8f9b7c5-h4n8q` is **CPU-throttled** at its 250m CPU limit" in _root_cause(throttled)
    assert "Secret `mailer-credentials`, which does not exist" in _root_cause(secret)


@pytest.mark.parametrize(
    ("alert", "claims"),
    [
        ("pod web-1 CrashLoopBackOff", {"pod": ["web-1"]}),
        ("shop namespace: web pods restarting", {"namespace": ["shop"]}),
        ("KubePodCrashLooping namespace: payments pod: api-1", {"namespace": ["payments"], "pod": ["api-1"]}),
        ("the pod keeps restarting on node worker-3", {"node": ["worker-3"]}),
        (ALERTMANAGER, {"alertname": ["KubePodNotReady"], "namespace": ["inventory"], "pod": [data.NOT_READY_POD]}),
        ("alertname: NodeFilesystemAlmostOutOfSpace\ninstance: 10.0.1.13:9100\nnode: worker-3\n",
         {"alertname": ["NodeFilesystemAlmostOutOfSpace"], "node": ["worker-3"]}),
        ("deployment=report-api, statefulset/orders-db", {"workload": ["report-api", "orders-db"]}),
        ('[{"labels": {"alertname": "KubePodCrashLooping", "pod": "web-1"}}]',
         {"alertname": ["KubePodCrashLooping"], "pod": ["web-1"]}),
        ("analytics-etl pods not starting in namespace analytics", {"namespace": ["analytics"],
                                                                    "workload": ["analytics-etl"]}),
        (json.dumps({"source": "pagerduty", "incident": {"title": "checkout-api pods crash in namespace shop",
                                  "service": {"summary": "orders-api"}}}),
         {"namespace": ["shop"], "workload": ["checkout-api", "orders-api"]}),
        (json.dumps({"labels": {"alertname": "HighCPU", "instance": "db-1:9100"},
                     "annotations": {"summary": "CPU above 90% on db-1:9100"}}),
         {"alertname": ["HighCPU"], "node": ["db-1"]}),
        ("", {}),
        ("42", {}),
    ],
)
def test_alert_names_are_read_from_text_json_and_yaml(alert, claims):
    assert parse_alert(alert).claims == claims


# ---- chat ---------------------------------------------------------------------------------------------------


def _chat_messages(config, tools, investigation: str, question: str) -> list[ConversationMessage]:
    chat = ChatContext(investigation=investigation, history=[("Is this a follow-up to last week's incident?",
                                                              "Not that the record shows.")], question=question)
    return build_react_messages(config=_config(config), tools=tools, alert_type="kubernetes",
                                alert_data="orders-db unhealthy", runbook="", previous_stage_context="", chat=chat)


async def _ask(cluster, config, tools, investigation: str, question: str) -> tuple[str, list[ToolCall]]:
    """One ReAct chat turn with the real chat prompt; a requested tool is called and the answer read after it."""
    messages = _chat_messages(config, tools, investigation, question)
    calls = []
    for _ in range(3):
        text = LLMResponse.collect(DemoProvider().generate(_request(messages, config, kind="chat"))).text
        messages.append(ConversationMessage(role="assistant", content=text))
        if "Final Answer:" in text:
            return text.split("Final Answer:", 1)[1], calls
        action = text.split("Action: ", 1)[1].split("\n", 1)[0]
        arguments = json.loads(text.split("Action Input: ", 1)[1])
        calls.append(ToolCall(id="c", name=action, arguments=arguments))
        result, _ = await _tool_text(cluster, action, arguments)
        messages.append(ConversationMessage(role="user", content=f"Observation: {result}"))
    pytest.fail("the chat did not answer")


async def test_chat_answers_the_current_question(open_cluster, demo_provider_config):
    async with open_cluster() as cluster:
        tools = await _definitions(cluster)
        investigation, _ = await _investigate(cluster, demo_provider_config, "orders-db unhealthy")
        logs, log_calls = await _ask(cluster, demo_provider_config, tools, investigation,
                                     f"What do the current logs of {data.DB_POD} say?")
        fix, fix_calls = await _ask(cluster, demo_provider_config, tools, investigation, "How do I fix this?")
        why, _ = await _ask(cluster, demo_provider_config, tools, investigation, "Why is it failing?")

    assert [(c.name, c.arguments) for c in log_calls] == [
        ("demo-kubernetes.pods_log", {"namespace": "shop", "name": data.DB_POD})]
    assert "FATAL:  the database system is starting up" in logs and "Raise the memory limit" not in logs
    assert fix_calls == [] and "Raise the memory limit of `orders-db` (now 256Mi)" in fix
    assert "FATAL:  the database system is starting up" not in fix
    assert "**Root cause found by the investigation:** `orders-db-0` is **OOMKilled**" in why
    assert len({logs, fix, why}) == 3
    assert "follow-up" not in logs + fix + why and "not found" not in logs  # the prompt's words are not pod names
