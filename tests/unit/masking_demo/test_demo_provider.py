"""The demo investigator, driven in a loop against the demo cluster in both tool protocols."""

from __future__ import annotations

import json
import re

import pytest

from agents.citations import Evidence, cited_ids, verify_citations
from agents.config.schema import MaskingConfig
from agents.context import ToolResult
from agents.llm.demo import DemoProvider
from agents.llm.types import (
    ConversationMessage,
    LLMRequest,
    LLMResponse,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolDefinition,
    UsageChunk,
)
from agents.mcp import demo_cluster_data as data
from agents.mcp.masking import mask_tool_result
from agents.prompts.builder import format_observation, tool_response

SERVER = "demo-kubernetes"
MAX_ITERATIONS = 8  # the demo must finish well inside the default max_iterations
MASKING = MaskingConfig(pattern_groups=["kubernetes"])
ALERT = f"Alert: KubePodCrashLooping\nnamespace: shop\npod: {data.CRASHING_POD}\nThe pod keeps restarting."


async def _tool_text(cluster, name: str, arguments: dict) -> tuple[str, bool]:
    result = await cluster.call_tool(name.split(".", 1)[1], arguments)
    text = "".join(c.text for c in result.content)
    return mask_tool_result(text, MASKING), bool(result.is_error)


async def _definitions(cluster) -> list[ToolDefinition]:
    tools = (await cluster.list_tools()).tools
    return [
        ToolDefinition(name=f"{SERVER}.{t.name}", description=t.description or "", parameters=t.input_schema)
        for t in tools
    ]


def _request(messages, config, tools=(), kind="iteration", iteration=1) -> LLMRequest:
    return LLMRequest(
        messages=list(messages), tools=list(tools), provider=config, interaction_type=kind, iteration=iteration
    )


async def _run_react(cluster, config) -> tuple[str, int, list[str]]:
    tools = await _definitions(cluster)
    system = "You are an SRE agent.\nAvailable tools:\n" + "\n".join(f"- {t.name}: {t.description}" for t in tools)
    messages = [ConversationMessage(role="system", content=system), ConversationMessage(role="user", content=ALERT)]
    called = []
    for iteration in range(1, MAX_ITERATIONS + 1):
        response = LLMResponse.collect(DemoProvider().generate(_request(messages, config, iteration=iteration)))
        messages.append(ConversationMessage(role="assistant", content=response.text))
        if "Final Answer:" in response.text:
            return response.text.split("Final Answer:", 1)[1], iteration, called
        action = re.search(r"^Action: (\S+)\nAction Input: (.+)$", response.text, re.M | re.S)
        assert action, response.text
        called.append(action.group(1))
        arguments = json.loads(action.group(2))
        text, is_error = await _tool_text(cluster, action.group(1), arguments)
        result = ToolResult(call=ToolCall(id=f"react-{iteration}", name=action.group(1), arguments=arguments),
                            content=text, is_error=is_error, evidence_id=f"E{len(called)}")
        messages.append(ConversationMessage(role="user", content=format_observation(result)))
    pytest.fail("the demo investigator did not conclude")


async def _run_native(cluster, config) -> tuple[str, int, list[str]]:
    tools = await _definitions(cluster)
    messages = [
        ConversationMessage(role="system", content="You are an SRE agent."),
        ConversationMessage(role="user", content=ALERT),
    ]
    called = []
    for iteration in range(1, MAX_ITERATIONS + 1):
        response = LLMResponse.collect(DemoProvider().generate(_request(messages, config, tools, iteration=iteration)))
        messages.append(response.as_assistant_message())
        if not response.tool_calls:
            return response.text, iteration, called
        for call in response.tool_calls:
            called.append(call.name)
            text, is_error = await _tool_text(cluster, call.name, call.arguments)
            result = ToolResult(call=call, content=("Error: " if is_error else "") + text, is_error=is_error,
                                evidence_id=f"E{len(called)}")
            messages.append(
                ConversationMessage(role="tool", content=tool_response(result), tool_call_id=call.id,
                                    tool_name=call.name)
            )
    pytest.fail("the demo investigator did not conclude")


def _assert_root_cause_found(answer: str) -> None:
    for fact in (
        data.CRASHING_POD,
        "CrashLoopBackOff",
        data.DB_POD,
        "OOMKilled",
        data.DB_MEMORY_LIMIT,
        "exit code 1",
        data.DB_FATAL_LINE,
        "demo",
    ):
        assert fact in answer, fact
    root_cause = next(line for line in answer.splitlines() if line.startswith("**Root cause:**"))
    assert data.DB_POD in root_cause and "OOMKilled" in root_cause and data.CRASHING_POD in root_cause


def _assert_every_result_cited(answer: str, calls: int) -> None:
    """The report cites the results it rests on, and only ids it was shown."""
    evidence = [Evidence(id=f"E{n}", event_id=n) for n in range(1, calls + 1)]
    citations = verify_citations(answer, evidence, ALERT)
    assert citations["invalid"] == [] and citations["uncited"] == [], citations
    root_cause = next(line for line in answer.splitlines() if line.startswith("**Root cause:**"))
    assert len(cited_ids(root_cause)) >= 3, root_cause


async def test_react_investigation_finds_the_oomkilled_database(open_cluster, demo_provider_config):
    async with open_cluster() as cluster:
        answer, iterations, called = await _run_react(cluster, demo_provider_config)

    _assert_root_cause_found(answer)
    _assert_every_result_cited(answer, len(called))
    assert iterations <= MAX_ITERATIONS
    assert called[0] == f"{SERVER}.pods_list" and f"{SERVER}.pods_log" in called


async def test_native_investigation_finds_the_oomkilled_database(open_cluster, demo_provider_config):
    async with open_cluster() as cluster:
        answer, iterations, called = await _run_native(cluster, demo_provider_config)

    _assert_root_cause_found(answer)
    _assert_every_result_cited(answer, len(called))
    assert iterations <= MAX_ITERATIONS
    plan = ["pods_list", "events_list", "pods_get", "pods_log", "pods_get"]  # web pod first, then its database
    assert called == [f"{SERVER}.{tool}" for tool in plan]


def test_native_tool_calls_use_canonical_names_and_demo_ids(demo_provider_config):
    tools = [ToolDefinition(name=f"{SERVER}.pods_list"), ToolDefinition(name=f"{SERVER}.pods_log")]
    messages = [ConversationMessage(role="user", content=ALERT)]

    chunks = list(DemoProvider().generate(_request(messages, demo_provider_config, tools)))

    calls = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    assert [(c.id, c.name, c.arguments) for c in calls] == [("demo-1", f"{SERVER}.pods_list", {})]
    usage = [c for c in chunks if isinstance(c, UsageChunk)]
    prompt_chars = len(ALERT) + sum(len(t.model_dump_json()) for t in tools)
    assert len(usage) == 1 and usage[0].input_tokens == prompt_chars // 4


def test_without_tools_it_concludes_honestly_from_the_alert(demo_provider_config):
    messages = [
        ConversationMessage(role="system", content="You are an SRE agent. No tools are available."),
        ConversationMessage(role="user", content=ALERT + " Status: CrashLoopBackOff"),
    ]

    response = LLMResponse.collect(DemoProvider().generate(_request(messages, demo_provider_config)))

    assert response.text.startswith("Thought:") and "Final Answer:" in response.text
    assert "could not verify with tools" in response.text and data.CRASHING_POD in response.text
    assert "CrashLoopBackOff" in response.text and "OOMKilled" not in response.text


def test_tool_errors_lead_to_an_honest_conclusion(demo_provider_config):
    tools = [ToolDefinition(name=f"{SERVER}.pods_list")]
    messages = [
        ConversationMessage(role="user", content=ALERT),
        ConversationMessage(role="assistant", tool_calls=[{"id": "demo-1", "name": f"{SERVER}.pods_list"}]),
        ConversationMessage(
            role="tool",
            content="Error: failed to list pods: connection refused",
            tool_call_id="demo-1",
            tool_name=f"{SERVER}.pods_list",
        ),
    ]

    response = LLMResponse.collect(DemoProvider().generate(_request(messages, demo_provider_config, tools)))

    assert not response.tool_calls
    assert "could not verify with tools" in response.text and "connection refused" in response.text


async def test_executive_summary_states_the_root_cause_briefly(open_cluster, demo_provider_config):
    async with open_cluster() as cluster:
        answer, _, _ = await _run_native(cluster, demo_provider_config)
    prompt = f"Summarise this investigation for an executive:\n\n{answer}"

    chunks = list(
        DemoProvider().generate(
            _request([ConversationMessage(role="user", content=prompt)], demo_provider_config, kind="executive_summary")
        )
    )

    summary = "".join(c.text for c in chunks if isinstance(c, TextChunk))
    assert data.DB_POD in summary and "OOMKilled" in summary and data.CRASHING_POD in summary
    assert len(re.findall(r"[.!?](?:\s|$)", summary)) <= 2 and "*" not in summary and len(summary) < 600


def test_summarization_keeps_the_failure_lines(demo_provider_config):
    result = "\n".join([f"2025-06-03T14:0{i % 10}:00Z INFO request {i} ok" for i in range(200)] + [data.DB_FATAL_LINE])
    prompt = f"Summarise this tool result:\n{result}"

    response = LLMResponse.collect(
        DemoProvider().generate(
            _request([ConversationMessage(role="user", content=prompt)], demo_provider_config, kind="summarization")
        )
    )

    assert data.DB_FATAL_LINE in response.text and len(response.text) < len(result) // 5


def test_synthesis_combines_root_causes(demo_provider_config):
    prompt = (
        "Investigation 1:\n**Root cause:** orders-db-0 is OOMKilled.\n\n"
        "Investigation 2:\n**Root cause:** orders-db-0 is OOMKilled.\n\n"
        "Investigation 3:\n**Root cause:** the web image is broken.\n"
    )

    response = LLMResponse.collect(
        DemoProvider().generate(
            _request([ConversationMessage(role="user", content=prompt)], demo_provider_config, kind="synthesis")
        )
    )

    assert "**Root cause:** orders-db-0 is OOMKilled." in response.text and "2 of 3" in response.text
    assert "web image is broken" in response.text and "demo" in response.text


async def test_chat_answers_from_context_and_fetches_logs_when_asked(open_cluster, demo_provider_config):
    async with open_cluster() as cluster:
        answer, _, _ = await _run_react(cluster, demo_provider_config)
        tools = await _definitions(cluster)
        question = f"Investigation:\n{answer}\n\nQuestion: what do the logs of {data.DB_POD} say?"
        messages = [ConversationMessage(role="user", content=question)]
        first = LLMResponse.collect(
            DemoProvider().generate(_request(messages, demo_provider_config, tools, kind="chat"))
        )
        call = first.tool_calls[0]
        text, _ = await _tool_text(cluster, call.name, call.arguments)
        messages += [
            first.as_assistant_message(),
            ConversationMessage(role="tool", content=text, tool_call_id=call.id, tool_name=call.name),
        ]
        second = LLMResponse.collect(
            DemoProvider().generate(_request(messages, demo_provider_config, tools, kind="chat"))
        )

    assert call.name == f"{SERVER}.pods_log" and call.arguments == {"namespace": "shop", "name": data.DB_POD}
    assert (
        not second.tool_calls
        and "OOMKilled" in second.text
        and "FATAL:  the database system is starting up" in (second.text)
    )


def test_a_paced_demo_streams_its_reply_over_the_pace_and_an_unpaced_one_at_once(demo_provider_config):
    """#45: with a pace the live timeline and token streaming can be watched; tests (pace 0) do not wait."""
    import time

    messages = [ConversationMessage(role="user", content=ALERT)]
    paced = demo_provider_config.model_copy(update={"latency_ms": 600})
    started = time.monotonic()
    chunks = list(DemoProvider().generate(_request(messages, paced)))
    took = time.monotonic() - started
    texts = [c for c in chunks if isinstance(c, TextChunk)]
    assert took >= 0.55 and len(texts) >= 20, (took, len(texts))

    started = time.monotonic()
    unpaced = list(DemoProvider().generate(_request(messages, demo_provider_config)))
    assert time.monotonic() - started < 0.2
    assert "".join(c.text for c in unpaced if isinstance(c, TextChunk)) == "".join(c.text for c in texts)


def test_the_pace_never_runs_into_the_steps_deadline(demo_provider_config):
    import time

    paced = demo_provider_config.model_copy(update={"latency_ms": 60_000})
    request = _request([ConversationMessage(role="user", content=ALERT)], paced)
    request = request.model_copy(update={"deadline": time.time() + 1.5})
    started = time.monotonic()
    list(DemoProvider().generate(request))
    assert time.monotonic() - started < 1.0


def test_the_demo_pace_comes_from_the_environment_and_is_zero_without_it():
    from agents.config.builtins import demo_pace_ms

    assert demo_pace_ms({}) == 0
    assert demo_pace_ms({"TARSY_DEMO_PACE_MS": "2500"}) == 2500
    with pytest.raises(ValueError, match="TARSY_DEMO_PACE_MS"):
        demo_pace_ms({"TARSY_DEMO_PACE_MS": "3s"})
