"""Skills in a running investigation: what the LLM receives on the wire, what tarsy.load_skill returns, and the
timeline, records and conversation that show each load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.prompts.fence import DATA_NOTE, GUIDANCE_NOTE, INJECTION_NOTE
from tarsy.models import MCPInteraction

from .conftest import messages, only_execution, react_action, run_to_end, start_session, timeline, wire_providers

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

CRASHLOOP_BODY = "# Crash loops\n\n1. Read the previous container's logs before the current ones."
LOCKS_BODY = "# Lock contention\n\n1. Find the session at the head of the pg_blocking_pids chain."
SKILLS = {
    "crashloop": f"---\nname: crashloop\ndescription: Pods that restart over and over.\n---\n\n{CRASHLOOP_BODY}\n",
    "pg-locks": f"---\nname: pg-locks\ndescription: Queries stuck behind a PostgreSQL lock.\n---\n{LOCKS_BODY}\n",
}
FINAL = "web-1 crashes because configmap app-config is missing."


@pytest.fixture
def skills_dir(tmp_path) -> Path:
    """The skills/ folder of the configuration directory `configure` writes."""
    for folder, text in SKILLS.items():
        (tmp_path / "config" / "skills" / folder).mkdir(parents=True)
        (tmp_path / "config" / "skills" / folder / "SKILL.md").write_text(text)
    return tmp_path / "config" / "skills"


def skill_calls(execution_id) -> list:
    return [e for e in timeline(execution_id) if e.event_type == "mcp_tool_call"
            and (e.metadata["server_name"], e.metadata["tool_name"]) == ("tarsy", "load_skill")]


def test_react_agent_gets_its_required_skill_and_loads_another_by_name(configure, llm_servers, skills_dir):
    gemini, openai = llm_servers
    configure({"default": ["unused"]}, providers=wire_providers(gemini, openai),
              agents={"SreAgent": {"mcp_servers": ["k8s"], "llm_provider": "gpt", "required_skills": ["crashloop"]}})
    openai.queue({"text": react_action("A lock may be involved.", "tarsy.load_skill", '{"name": "pg-locks"}')},
                 {"text": react_action("And the DNS skill?", "tarsy.load_skill", "dns-outage")},
                 {"text": f"Thought: enough.\nFinal Answer: {FINAL}"})
    execution = only_execution(start_session())

    run_to_end(execution.id)

    first, second, third = openai.bodies()
    system = first["messages"][0]
    assert system["role"] == "system"
    assert "## Skills\n" in system["content"] and "## Skill: crashloop\n" in system["content"]
    assert f"```text\n{CRASHLOOP_BODY.strip()}\n```" in system["content"]  # fenced, as the operators' guidance
    assert GUIDANCE_NOTE in system["content"] and INJECTION_NOTE not in system["content"]
    assert "## Skills you can load" in system["content"]
    assert "- pg-locks: Queries stuck behind a PostgreSQL lock." in system["content"]
    assert "- crashloop:" not in system["content"] and LOCKS_BODY not in system["content"]
    assert "tarsy.load_skill: Load one of the skills" in system["content"]  # in the ReAct tool list

    loaded = second["messages"][-1]["content"]
    assert loaded.startswith("Observation: The block below contains the skill that tarsy.load_skill loaded")
    assert GUIDANCE_NOTE in loaded and LOCKS_BODY.strip() in loaded and DATA_NOTE not in loaded
    refused = third["messages"][-1]["content"]
    assert "Error: unknown skill 'dns-outage'. Available skills: pg-locks." in refused

    ok, unknown = skill_calls(execution.id)
    assert (ok.status, ok.metadata["arguments"], ok.content) == ("completed", {"name": "pg-locks"}, LOCKS_BODY)
    assert (unknown.status, unknown.metadata["arguments"]) == ("failed", {"name": "dns-outage"})
    assert unknown.metadata["error_kind"] == "unknown_skill"
    results = [e for e in timeline(execution.id) if e.event_type == "tool_result"]
    assert [(r.metadata["tool_name"], r.metadata["is_error"]) for r in results] == [("load_skill", False),
                                                                                    ("load_skill", True)]
    assert not any(r.metadata.get("evidence_id") for r in results)  # guidance, not evidence
    records = list(MCPInteraction.objects.filter(execution_id=execution.id).order_by("id"))
    assert [(r.server, r.tool, r.success) for r in records] == [("tarsy", "load_skill", True),
                                                                          ("tarsy", "load_skill", False)]
    execution.refresh_from_db()
    assert (execution.status, execution.final_analysis) == ("completed", FINAL)


def test_native_agent_without_mcp_servers_calls_load_skill_as_a_function(configure, llm_servers, skills_dir):
    gemini, openai = llm_servers
    configure({"default": ["unused"]}, strategy="native-thinking", providers=wire_providers(gemini, openai),
              agents={"SreAgent": {"mcp_servers": [], "llm_provider": "gpt", "skills": ["pg-locks"]}})
    openai.queue({"tool_calls": [{"id": "call_1", "name": "tarsy__load_skill", "arguments": {"name": "pg-locks"}}]},
                 {"text": FINAL})
    execution = only_execution(start_session())

    run_to_end(execution.id)

    first, second = openai.bodies()
    assert [t["function"]["name"] for t in first["tools"]] == ["tarsy__load_skill"]
    assert "- pg-locks: Queries stuck behind a PostgreSQL lock." in first["messages"][0]["content"]
    assert "crashloop" not in first["messages"][0]["content"]  # not among this agent's skills
    (response,) = [m for m in second["messages"] if m["role"] == "tool"]
    assert response["tool_call_id"] == "call_1" and LOCKS_BODY in response["content"]
    (call,) = skill_calls(execution.id)
    assert call.metadata["arguments"] == {"name": "pg-locks"} and call.content == LOCKS_BODY
    (tool_message,) = [m for m in messages(execution.id) if m.role == "tool"]
    assert json.dumps(LOCKS_BODY)[1:-1] in json.dumps(tool_message.content)
