"""A self-hosted OpenAI-compatible model (Ollama, vLLM, LM Studio): a `base_url`, no API key, ReAct for a model
without function calling, an unknown cost, and a readable failure when the server is down (real LangChain and
OpenAI SDKs against the fake server, the real k8s MCP server)."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from controllers.base import StepStatus
from tests.fakes.fake_openai import FakeOpenAI

from .conftest import interactions, only_execution, react_action, run_to_end, start_session, timeline

pytestmark = [pytest.mark.services, pytest.mark.django_db, pytest.mark.timeout(90)]

FINAL = "web-1 crashes because configmap app-config is missing."
CLOUD_KEY = "sk-cloud-key-that-must-stay-home"


@pytest.fixture
def local_server():
    server = FakeOpenAI().start()
    yield server
    server.stop()


def _configure(configure, base_url: str, **kwargs: Any):
    local = {"type": "openai", "model": "llama3.1:8b", "base_url": base_url}  # no api_key_env: no key at all
    return configure({"default": ["unused"]}, strategy="react", providers={"local": local},
                     agents={"SreAgent": {"mcp_servers": ["k8s"], "llm_provider": "local"}}, **kwargs)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed when the block ends: nothing listens there


def test_a_self_hosted_model_investigates_through_react_without_an_api_key(configure, local_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CLOUD_KEY)  # set for the cloud provider: never sent to your own server
    _configure(configure, f"{local_server.url}/v1")
    local_server.queue({"text": react_action("Check the pods.", "k8s.get_pods", '{"namespace": "prod"}')},
                       {"text": f"Thought: That explains it.\nFinal Answer: {FINAL}"})
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert [o.status for o in outcomes] == [StepStatus.CONTINUE, StepStatus.COMPLETED]
    assert outcomes[-1].final_analysis == FINAL
    first, second = local_server.requests
    assert first.body["model"] == "llama3.1:8b" and "tools" not in first.body  # no function calling needed
    assert "Observation:" in second.body["messages"][-1]["content"]
    assert CLOUD_KEY not in json.dumps([r.headers for r in local_server.requests])
    assert [(i.provider, i.success, i.cost_usd) for i in interactions(execution.id)] == [("local", True, None)] * 2


def test_an_unreachable_self_hosted_server_is_a_recorded_failure_naming_its_url(configure):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    _configure(configure, url, max_iterations=1)
    execution = only_execution(start_session())

    outcomes = run_to_end(execution.id)

    assert outcomes[-1].status is StepStatus.FAILED
    error = next(e for e in timeline(execution.id) if e.event_type == "error")
    assert error.content.startswith(f"LLM error: cannot reach the LLM server at {url} (")
    assert "Traceback" not in error.content
    failed = interactions(execution.id)[0]
    assert not failed.success and f"cannot reach the LLM server at {url}" in failed.error_message
