"""Pseudonymisation end to end through a real Celery worker, with the cloud model played by the fake OpenAI server
(the real LangChain/openai SDK talks to it; its recorded request bodies are exactly what the model received).

Session A: an orchestrator reads a pod through the MCP test server by placeholders, tries a placeholder it was
never given, dispatches a sub-agent, concludes; the session is scored and reflected into a memory naming A's pod.
Session B (same service, another pod) recalls that memory, and a chat follows. No seeded identifier appears in any
request body (chat completions and embeddings alike); what people see carries the real names."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from tarsy.models import AgentExecution, LLMInteraction, MCPInteraction, Memory, Pseudonym, TimelineEvent
from tests.fakes.fake_openai import FakeOpenAI
from tests.fakes.sse_server import RecordedRequest, Reply
from tests.support.configdir import scripted_provider
from tests.support.processes import wait_for
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(240)]

NAMESPACE, CLUSTER, EMAIL, CUSTOMER = "shop-prod-eu", "eu-prod-7", "oncall@acme.example", "CUST-48213"
POD_A, POD_B, NODE = "checkout-7d9f-x2kq", "checkout-7d9f-zz9p", "ip-10-0-1-5.ec2.internal"
SEEDED = (NAMESPACE, CLUSTER, EMAIL, CUSTOMER, POD_A, POD_B, NODE)
TOOLS_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers" / "tools_server.py")
INCIDENT = f"Pod {POD_A} in namespace {NAMESPACE} crash-loops when config map checkout-config is missing."
REFLECTION = {"memories": [{"kind": "incident", "text": INCIDENT, "evidence_ids": ["E1"]}]}
VERDICT = {"support": "supported", "score": 80, "rationale": "Fine.", "tags": []}


def _alert(pod: str) -> str:
    return json.dumps({"labels": {"alertname": "PodCrashLooping", "service": "checkout", "namespace": NAMESPACE,
                                  "pod": pod, "cluster": CLUSTER, "node": NODE},
                       "message": f"{pod} CrashLoopBackOff; owner {EMAIL}; customer {CUSTOMER}"})


def _calls(*calls: tuple[str, dict]) -> dict:
    return {"tool_calls": [{"id": f"call_{i}", "name": name.replace(".", "__"), "arguments": args}
                           for i, (name, args) in enumerate(calls)]}


class CloudModel(FakeOpenAI):
    """Answers by what each request holds (agents run concurrently, so replies cannot be queued in order)."""

    def build_reply(self, spec: dict[str, Any] | None, request: RecordedRequest, stream: bool) -> Reply:
        return super().build_reply(_answer(request.body if isinstance(request.body, dict) else {}), request, stream)


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    text = json.dumps(messages)
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    if "fail like" in text:
        return {"text": "Yes: <pod:1> and, earlier, <pod:2> on <node:1>."}
    if "tarsy__dispatch_agent" in tools:
        if "Memories from past investigations" in text:
            return {"text": "<pod:1> crash-loops like before."}
        if "Result of sub-agent" in text:
            return {"text": "Root cause: <pod:1> in <ns:1> lost config map checkout-config; <cust:1> is affected; "
                            "<pod:9> means nothing."}
        if "pod_info" in text and "dispatch_agent" not in text:
            return _calls(("tarsy.dispatch_agent", {"agent": "Pods", "task": "Is <pod:1> on <node:1> healthy?"}))
        if "pod_info" not in text:
            return _calls(("tools.pod_info", {"namespace": "<ns:1>", "pod": "<pod:1>"}),
                          ("tools.echo", {"text": "<pod:9>"}))
        return {"text": "Waiting for the sub-agent."}
    if tools:
        return {"text": "<pod:1> in <ns:1> is Running on <node:1>."}
    return {"text": "Summary: <pod:1> crash-loops."}


@pytest.fixture
def fake_llm():
    server = CloudModel()
    server.start()
    yield server
    server.stop()


def _configure(scripted_config, fake_llm) -> None:
    llm = {"type": "openai", "model": "fake-chat", "base_url": f"{fake_llm.url}/v1"}
    embedder = {"type": "openai", "model": "fake-embedding", "base_url": f"{fake_llm.url}/v1"}
    native = {"iteration_strategy": "native-thinking"}
    scripted_config({}, tarsy={
        "defaults": {"llm_provider": "llm", "iteration_strategy": "native-thinking"},
        "privacy": {"pseudonymise": True, "patterns": [{"kind": "cust", "pattern": r"CUST-\d{5}"}]},
        "mcp_servers": {"tools": {"transport": {"type": "stdio", "command": sys.executable,
                                                "args": [TOOLS_SERVER, "stdio"]}}},
        "agents": {"Lead": {**native, "sub_agents": ["Pods"], "mcp_servers": ["tools"]},
                   "Pods": {**native, "description": "Kubernetes pods", "mcp_servers": ["tools"]},
                   "ChatAgent": {**native, "mcp_servers": []}},
        "agent_chains": {"crash": {"alert_types": ["crash"], "stages": [
            {"name": "investigate", "agents": [{"name": "Lead"}]}]}},
        "scoring": {"llm_provider": "scorer"},
        "memory": {"enabled": True, "llm_provider": "reflector", "embedding_provider": "embedder",
                   "similarity_floor": 0.0},
    }, extra_providers={"llm": llm, "embedder": embedder,
                        "scorer": scripted_provider({"scoring": [{"text": json.dumps(VERDICT)}]}),
                        "reflector": scripted_provider({"memory_reflection": [{"text": json.dumps(REFLECTION)}]})})


def _seeded_in_requests(fake_llm) -> list[str]:
    bodies = json.dumps([r.body for r in fake_llm.requests])
    return [value for value in SEEDED if value in bodies]


def test_no_real_identifier_reaches_the_cloud_model_and_people_see_real_names(scripted_config, worker, fake_llm):
    _configure(scripted_config, fake_llm)
    proc = worker()
    client = APIClient()

    # A: read the pod by placeholders, try one never given, dispatch the sub-agent, conclude, summarise.
    response = client.post("/api/v1/alerts", {"alert_type": "crash", "data": _alert(POD_A)}, format="json")
    assert response.status_code == 202, response.content
    a = response.json()["session_id"]
    (done,) = wait_terminal([a], timeout=120, proc=proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])
    memory = wait_for(lambda: Memory.objects.filter(session_id=a).first(), timeout=60,
                      message=f"A's memory\n{proc.log()[-3000:]}")
    assert memory.text == INCIDENT  # learned in real names: memories outlive the session's mapping

    # B: another pod of the same service recalls A's memory; then a chat.
    response = client.post("/api/v1/alerts", {"alert_type": "crash", "data": _alert(POD_B)}, format="json")
    b = response.json()["session_id"]
    (done_b,) = wait_terminal([b], timeout=120, proc=proc)
    assert done_b.status == "completed", (done_b.error_message, proc.log()[-3000:])
    assert TimelineEvent.objects.filter(session_id=b, event_type="memory.recalled").exists()
    asked = client.post(f"/api/v1/sessions/{b}/chat/messages", {"content": f"Did {POD_B} fail like {POD_A}?"},
                        format="json")
    assert asked.status_code in (200, 201, 202), asked.content
    wait_for(lambda: LLMInteraction.objects.filter(session_id=b, interaction_type="chat", success=True).exists(),
             timeout=90, message=f"the chat's answer\n{proc.log()[-3000:]}")

    # What must never happen: a seeded identifier in any request body the cloud model (or its embedder) received.
    assert len(fake_llm.requests) >= 8
    assert _seeded_in_requests(fake_llm) == []
    paths = {r.path for r in fake_llm.requests}
    assert any("embeddings" in p for p in paths) and any("chat/completions" in p for p in paths)

    # The tool got real values; the invented placeholder was never sent, and the model was told why.
    (pod_info,) = MCPInteraction.objects.filter(session_id=a, tool="pod_info")
    assert pod_info.arguments == {"namespace": NAMESPACE, "pod": POD_A}
    assert not MCPInteraction.objects.filter(session_id=a, tool="echo").exists()
    refused = TimelineEvent.objects.get(session_id=a, event_type="mcp_tool_call", metadata__tool_name="echo")
    assert refused.metadata["error_kind"] == "unknown_placeholder" and "<pod:9>" in refused.content

    # The sub-agent was asked, and answered, in real names; the stored interactions keep what the model saw.
    child = AgentExecution.objects.get(session_id=a, agent_name="Pods")
    assert child.status == "completed"
    child_call = LLMInteraction.objects.get(execution=child, interaction_type="iteration")
    assert "<pod:1>" in json.dumps(child_call.conversation) and POD_A not in json.dumps(child_call.conversation)

    # People see real names: the API, the sub-agent's answer, the chat; an invented placeholder stays as written.
    session = client.get(f"/api/v1/sessions/{a}").json()
    assert session["final_analysis"].startswith(f"Root cause: {POD_A} in {NAMESPACE} lost")
    assert CUSTOMER in session["final_analysis"] and "<pod:9> means nothing" in session["final_analysis"]
    assert session["executive_summary"] == f"Summary: {POD_A} crash-loops."
    answer = TimelineEvent.objects.filter(session_id=a, execution=child, event_type="final_analysis").get()
    assert answer.content == f"{POD_A} in {NAMESPACE} is Running on {NODE}."
    chat_answer = TimelineEvent.objects.filter(session_id=b, stage__kind="chat", event_type="final_analysis").get()
    assert chat_answer.content == f"Yes: {POD_B} and, earlier, {POD_A} on {NODE}."

    # Each session has its own mapping; B adopted A's pod from the memory it recalled.
    assert set(Pseudonym.objects.filter(session_id=b, kind="pod").values_list("value", flat=True)) == {POD_A, POD_B}
