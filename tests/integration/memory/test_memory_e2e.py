"""Investigation memory end to end through a real Celery worker: alert A is investigated, scored and reviewed
accurate, and its memories (provenance A) reach alert B's first prompt; an inaccurate review of A retires them and
alert C no longer recalls them. The investigation talks to the fake OpenAI server (its recorded requests are what
the model received), which also serves the embeddings, and reads one tool result (the evidence its memories cite)
from the real stdio MCP test server; scorer and reflector are scripted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tarsy.models import LLMInteraction, Memory, SessionScore, TimelineEvent
from tests.fakes.fake_openai import start_fake_openai
from tests.support.configdir import scripted_provider
from tests.support.processes import wait_for
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

INCIDENT = ("In namespace shop the checkout service crash-loops when its config map checkout-config is missing; "
            "restoring checkout-config from git fixes it.")
PROCEDURE = "For checkout crash loops, check that config map checkout-config exists before reading pod logs."
REFLECTION = {"memories": [
    {"kind": "incident", "text": INCIDENT, "evidence_ids": ["E1"], "labels": {"service": "checkout"}},
    {"kind": "procedure", "text": PROCEDURE, "evidence_ids": ["E1"]},
    {"kind": "fact", "text": "dropped: cites nothing the session saw", "evidence_ids": ["E7"]},
    {"kind": "rumour", "text": "dropped: not a kind the rubric knows"},
]}
VERDICT = {"support": "supported", "score": 80, "rationale": "Fine.", "tags": []}
ANSWER = ("Thought: The config map is gone.\n"
          "Final Answer: checkout crashes because config map checkout-config is missing.")
LOOK = 'Thought: Check the events.\nAction: tools.echo\nAction Input: {"text": "configmap checkout-config not found"}'
TOOLS_SERVER = str(Path(__file__).resolve().parents[2] / "fakes" / "mcp_servers" / "tools_server.py")


def _alert(message: str, service: str = "checkout") -> str:
    return json.dumps({"labels": {"alertname": "PodCrashLooping", "service": service, "namespace": "shop"},
                       "message": message})


@pytest.fixture
def fake_llm():
    server = start_fake_openai(repeat_last=True)
    yield server
    server.stop()


def _configure(scripted_config, fake_llm, reflector_turns):
    llm = {"type": "openai", "model": "fake-chat", "base_url": f"{fake_llm.url}/v1"}
    embedder = {"type": "openai", "model": "fake-embedding", "base_url": f"{fake_llm.url}/v1"}
    scripted_config({}, tarsy={
        "defaults": {"llm_provider": "llm"},
        "mcp_servers": {"tools": {"transport": {"type": "stdio", "command": sys.executable,
                                                "args": [TOOLS_SERVER, "stdio"]}}},
        "agents": {"KubernetesAgent": {"mcp_servers": ["tools"]}},
        "scoring": {"llm_provider": "scorer"},
        "memory": {"enabled": True, "llm_provider": "reflector", "embedding_provider": "embedder",
                   "similarity_floor": 0.2},
    }, extra_providers={"llm": llm, "embedder": embedder,
                        "scorer": scripted_provider({"scoring": [{"text": json.dumps(VERDICT)}]}),
                        "reflector": scripted_provider({"memory_reflection": reflector_turns})})


def _submit(client, data: str, fake_llm) -> str:
    """Submitted once the investigation's two replies are queued: read the events (E1), then conclude (repeated
    for the summary and later chats). Sessions run one after another here, so the queue is theirs."""
    fake_llm.queue({"text": LOOK}, {"text": ANSWER})
    response = client.post("/api/v1/alerts", {"alert_type": "kubernetes", "data": data}, format="json")
    assert response.status_code == 202, response.content
    return response.json()["session_id"]


def _reflections(session_id) -> int:
    return LLMInteraction.objects.filter(session_id=session_id, interaction_type="memory_reflection").count()


def _first_prompt(fake_llm, marker: str) -> str:
    """The user message of the first chat completion the fake server received for the alert carrying `marker`."""
    for request in fake_llm.requests:
        messages = request.body.get("messages") or [] if isinstance(request.body, dict) else []
        user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        if marker in user:
            return user
    raise AssertionError(f"no LLM request carried {marker!r}")


def test_a_reviewed_investigation_is_remembered_recalled_and_forgotten(scripted_config, worker, fake_llm):
    _configure(scripted_config, fake_llm, [{"text": "```json\n" + json.dumps(REFLECTION) + "\n```"},
                                          {"text": json.dumps(REFLECTION)}, {"text": '{"memories": []}'}])
    proc = worker()
    client = APIClient()

    # A: investigated, scored, and the reflection after the score learns two memories with provenance A.
    a = _submit(client, _alert("checkout-7d9 pod CrashLoopBackOff: configmap checkout-config not found"), fake_llm)
    wait_terminal([a], timeout=60, proc=proc)
    wait_for(lambda: SessionScore.objects.filter(session_id=a, status="scored").exists(), timeout=60,
             message="A to be scored")
    learned = wait_for(lambda: list(Memory.objects.filter(session_id=a).order_by("id")) or None, timeout=60,
                       message=f"A's memories\n{proc.log()[-3000:]}")
    assert [(m.kind, m.text, m.state) for m in learned] == [("incident", INCIDENT, "active"),
                                                            ("procedure", PROCEDURE, "active")]
    incident, procedure = learned
    assert incident.evidence_ids == ["E1"] and incident.source_sessions == [a]
    reflected = wait_for(lambda: TimelineEvent.objects.filter(session_id=a, event_type="memory.reflected").first(),
                         timeout=30, message="A's reflection on its timeline")  # written just after the memories
    assert [d["reason"] for d in reflected.metadata["dropped"]] == ["it cites evidence the session never had: E7"]
    assert incident.labels == {"service": "checkout"}  # the reflector's scope
    assert procedure.labels == {"service": "checkout", "namespace": "shop"}  # the alert's, by default
    assert incident.embedding and incident.embedding_model == "fake-embedding"
    assert incident.confidence == 0.5 and incident.alert_type == "kubernetes"
    call = LLMInteraction.objects.get(session_id=a, interaction_type="memory_reflection")
    assert call.success and call.provider == "reflector" and "checkout-config" in call.conversation[1]["content"]

    # Reviewed accurate: confidence rises; the review's reflection finds the same memories (no copies).
    response = client.post(f"/api/v1/sessions/{a}/review", {"rating": "accurate", "feedback": "Spot on."},
                           format="json")
    assert response.status_code == 200, response.content
    assert Memory.objects.get(id=incident.id).confidence == 0.65
    wait_for(lambda: _reflections(a) == 2, timeout=60, message="the review's reflection")
    assert Memory.objects.filter(session_id=a).count() == 2
    review_call = LLMInteraction.objects.filter(session_id=a, interaction_type="memory_reflection").last()
    assert "Spot on." in review_call.conversation[1]["content"]

    # B: the same service in other words recalls them: on its timeline and in its first prompt.
    b = _submit(client, _alert("Checkout containers keep restarting in a crash loop after the last deploy"),
                fake_llm)
    wait_terminal([b], timeout=60, proc=proc)
    recalled = TimelineEvent.objects.get(session_id=b, event_type="memory.recalled")
    assert set(recalled.metadata["memory_ids"]) == {incident.id, procedure.id}
    assert recalled.metadata["mode"] == "hybrid" and len(recalled.metadata["scores"]) == 2
    prompt = _first_prompt(fake_llm, "crash loop after the last deploy")
    assert f"[M{incident.id}]" in prompt and INCIDENT in prompt and f"[M{procedure.id}]" in prompt
    assert "## Memories from past investigations" in prompt
    assert Memory.objects.get(id=incident.id).use_count == 1

    # A chat about B recalls them too, by the question's words as well as the alert's.
    asked = client.post(f"/api/v1/sessions/{b}/chat/messages", {"content": "Did the checkout config map vanish again?"},
                        format="json")
    assert asked.status_code in (200, 201, 202), asked.content
    chat_recall = wait_for(lambda: TimelineEvent.objects.filter(session_id=b, event_type="memory.recalled",
                                                                stage__kind="chat").first(),
                           timeout=60, message=f"the chat's recall\n{proc.log()[-3000:]}")
    assert incident.id in chat_recall.metadata["memory_ids"]
    wait_for(lambda: LLMInteraction.objects.filter(session_id=b, interaction_type="chat", success=True).exists(),
             timeout=60, message="the chat's answer")
    assert f"[M{incident.id}]" in _first_prompt(fake_llm, "Did the checkout config map vanish again?")

    # A reviewed inaccurate: the memories it produced are retired; C recalls nothing.
    response = client.post(f"/api/v1/sessions/{a}/review", {"rating": "inaccurate",
                                                            "feedback": "Wrong: it was the node."}, format="json")
    assert response.status_code == 200, response.content
    assert set(Memory.objects.filter(session_id=a).values_list("state", flat=True)) == {"retired"}
    wait_for(lambda: _reflections(b) >= 1 and _reflections(a) == 3, timeout=60, message="the later reflections")
    assert not Memory.objects.filter(state="active").exists()  # B's reflection found them again: retired stays
    c = _submit(client, _alert("Checkout containers keep restarting, again"), fake_llm)
    wait_terminal([c], timeout=60, proc=proc)
    assert not TimelineEvent.objects.filter(session_id=c, event_type="memory.recalled").exists()
    assert "[M" not in _first_prompt(fake_llm, "keep restarting, again")


def test_another_service_does_not_recall_them(scripted_config, worker, fake_llm):
    """Scope: a memory labelled service=checkout is not recalled for the payments service."""
    _configure(scripted_config, fake_llm, [{"text": json.dumps(REFLECTION)}])
    proc = worker()
    client = APIClient()
    a = _submit(client, _alert("checkout-7d9 pod CrashLoopBackOff: configmap checkout-config not found"), fake_llm)
    wait_for(lambda: Memory.objects.filter(session_id=a).count() == 2, timeout=90,
             message=f"A's memories\n{proc.log()[-3000:]}")
    d = _submit(client, _alert("payments pods crash loop: configmap checkout-config not found", service="payments"),
                fake_llm)
    wait_terminal([d], timeout=60, proc=proc)
    assert not TimelineEvent.objects.filter(session_id=d, event_type="memory.recalled").exists()
