"""Tool results end to end: secrets never stored or sent to the LLM; large results summarized."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tarsy.models import Event, LLMInteraction, MCPInteraction, Message, TimelineEvent
from tarsy.selectors.conversations import llm_conversations
from tarsy.services.intake.alerts import session_submit
from tests.fakes.fake_openai import FakeOpenAI
from tests.fakes.mcp_servers.tools_server import AWS_KEY
from tests.support.configdir import scripted_provider, write_config
from tests.support.sessions import wait_terminal

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TOOLS_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_servers" / "tools_server.py")
SECRET_PASSWORD_B64 = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk"


def _tools_server(**extra) -> dict:
    return {"transport": {"type": "stdio", "command": sys.executable, "args": [TOOLS_SERVER, "stdio"]}, **extra}


@pytest.mark.timeout(150)
def test_secret_from_a_tool_result_is_nowhere_in_storage_or_llm_requests(config_dir, worker):
    fake = FakeOpenAI().start()
    try:
        fake.queue(
            {"text": "Thought: read the credentials.\nAction: vault.get_secret\nAction Input: {}", "chunk_size": 9},
            {"text": "Thought: seen them.\nFinal Answer: The db-credentials Secret exists in prod.", "chunk_size": 9},
            {"text": "db-credentials exists."},
        )
        write_config(config_dir, tarsy={
            "defaults": {"llm_provider": "gateway"},
            "mcp_servers": {"vault": _tools_server(data_masking={"pattern_groups": ["kubernetes", "cloud"]})},
            "agents": {"KubernetesAgent": {"mcp_servers": ["vault"]}},
        }, providers={"gateway": {"type": "openai", "model": "gpt-test", "api_key_env": "FAKE_LLM_KEY",
                                  "base_url": f"{fake.url}/v1"}})
        proc = worker(concurrency=1, FAKE_LLM_KEY="test-key")
        session = session_submit(alert_type="kubernetes", data="db credentials rotated?")
        (done,) = wait_terminal([session.id], 90, proc)
        assert done.status == "completed", (done.error_message, proc.log()[-3000:])
        assert done.final_analysis == "The db-credentials Secret exists in prod."

        stored = [
            *Message.objects.filter(session=done).values_list("content", flat=True),
            *(json.dumps(c) for c in LLMInteraction.objects.filter(session=done).values_list("conversation",
                                                                                              flat=True)),
            *MCPInteraction.objects.filter(session=done).values_list("result", flat=True),
            *TimelineEvent.objects.filter(session=done).values_list("content", flat=True),
            *(json.dumps(p) for p in Event.objects.filter(session=done).values_list("payload", flat=True)),
        ]
        sent_to_llm = [json.dumps(body) for body in fake.bodies()]
        for secret in (SECRET_PASSWORD_B64, AWS_KEY):
            assert not [s for s in stored if secret in s], f"{secret} stored"
            assert not [s for s in sent_to_llm if secret in s], f"{secret} sent to the LLM"
        # the masking really ran on this result (not just an empty result)
        result = MCPInteraction.objects.get(session=done).result
        assert "[MASKED_SECRET_DATA]" in result and "__MASKED_AWS_ACCESS_KEY__" in result
        assert "db-credentials" in result
        assert any("[MASKED_SECRET_DATA]" in s for s in sent_to_llm)
    finally:
        fake.stop()


@pytest.mark.timeout(150)
def test_large_tool_result_is_summarized_and_kept_raw_for_debugging(config_dir, worker):
    write_config(config_dir, tarsy={
        "defaults": {"llm_provider": "scripted"},
        "mcp_servers": {"logs": _tools_server(summarization={"size_threshold_tokens": 200,
                                                             "summary_max_token_limit": 100})},
        "agents": {"KubernetesAgent": {"mcp_servers": ["logs"]}},
    }, providers={"scripted": scripted_provider({
        "KubernetesAgent": [
            {"text": 'Thought: read the logs.\nAction: logs.big_output\nAction Input: {"n": 20000}'},
            {"text": "Thought: the summary is enough.\nFinal Answer: web-0 serves requests normally."},
        ],
        "summarization": ["SUMMARY: 20000 characters of routine request logs from web-0, no errors."],
        "executive_summary": ["web-0 is healthy."],
    })})
    proc = worker(concurrency=1)
    session = session_submit(alert_type="kubernetes", data="web-0 slow?")
    (done,) = wait_terminal([session.id], 90, proc)
    assert done.status == "completed", (done.error_message, proc.log()[-3000:])

    interaction = MCPInteraction.objects.get(session=done)
    assert interaction.summarized is True
    assert interaction.raw_size >= 20000
    assert len(interaction.result) >= 20000 and "request served" in interaction.result
    observation = Message.objects.filter(session=done, role="user", iteration=1).order_by("sequence_number").last()
    assert "SUMMARY: 20000 characters of routine request logs" in observation.content
    assert "request served in 12ms" not in observation.content
    assert TimelineEvent.objects.filter(session=done, event_type="mcp_tool_summary").exists()
    [summary_call] = llm_conversations(list(LLMInteraction.objects.filter(session=done,
                                                                          interaction_type="summarization")))
    assert summary_call.success
    assert any("request served" in m["content"] for m in summary_call.conversation)
