"""MCPToolExecutor end to end: real MCP servers, the in-memory recorder, and a scripted LLM for summaries."""

from __future__ import annotations

import time
from dataclasses import asdict

import pytest

from agents.config.schema import MCPServerConfig
from agents.llm.recorded import LLMTarget
from agents.llm.types import ToolCall
from agents.mcp.executor import MCPToolExecutor
from agents.mcp.pool import MCPPool
from agents.mcp.summarizer import ResultSummarizer
from tests.fakes.mcp_servers.tools_server import AWS_KEY

from .conftest import PROVIDER, InMemoryRecorder, ScriptedLLM, resolved_for, stdio_config, tarsy_config

pytestmark = pytest.mark.timeout(60)

SECRET_VALUES = ("c3VwZXItc2VjcmV0LXBhc3N3b3Jk", "YWRtaW4=", AWS_KEY)
SERVERS = {
    "tools": stdio_config(data_masking={"pattern_groups": ["kubernetes", "cloud"]},
                          summarization={"size_threshold_tokens": 500, "summary_max_token_limit": 100}),
    "slow": stdio_config(call_timeout=1.0),
    "broken": stdio_config(transport={"command": "/nonexistent/mcp-server"}),
}


def make_executor(pool: MCPPool, recorder: InMemoryRecorder, servers: list[str] | None = None,
                  tool_filter: dict[str, tuple[str, ...]] | None = None, summarizer: ResultSummarizer | None = None,
                  deadline: float | None = None, extra: dict[str, MCPServerConfig] | None = None) -> MCPToolExecutor:
    return MCPToolExecutor(config=tarsy_config({**SERVERS, **(extra or {})}),
                           resolved=resolved_for(servers or ["tools"], tool_filter), recorder=recorder,
                           pool=pool, summarizer=summarizer, deadline=deadline)


def make_summarizer(recorder: InMemoryRecorder, llm: ScriptedLLM) -> ResultSummarizer:
    return ResultSummarizer(target=LLMTarget(name="test", config=PROVIDER, adapter=llm), recorder=recorder,
                            investigation_so_far=lambda: "Checked pod web-0: CrashLoopBackOff.",
                            agent_name="TestAgent", execution_id="exec-1", iteration=3)


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id="call-1", name=name, arguments=arguments)


def everything_recorded(recorder: InMemoryRecorder) -> str:
    return repr([asdict(e) for e in recorder.events]) + repr(recorder.mcp) + repr(recorder.llm)


def test_lists_the_tools_of_the_agents_servers_filtered_by_the_alert_selection(shared_pool, recorder) -> None:
    executor = make_executor(shared_pool, recorder, tool_filter={"tools": ("echo", "tools.add")})

    assert sorted(t.name for t in executor.list_tools()) == ["tools.add", "tools.echo"]


def test_a_server_that_fails_to_start_is_skipped_with_one_warning(shared_pool, recorder) -> None:
    executor = make_executor(shared_pool, recorder, servers=["broken", "tools"])

    names = [t.name for t in executor.list_tools()] + [t.name for t in executor.list_tools()]
    result = executor.execute(call("broken.anything"))

    assert "tools.echo" in names and not any(n.startswith("broken.") for n in names)
    warnings = recorder.of_type("error")
    assert len(warnings) == 1 and "'broken' is unavailable" in warnings[0].content
    assert result.is_error and "'broken' is unavailable" in result.content


def test_a_call_records_its_event_interaction_and_result_in_order(shared_pool, recorder) -> None:
    result = make_executor(shared_pool, recorder).execute(call("tools.add", a=2, b=3))

    assert (result.content, result.is_error, result.summarized, result.evidence_id) == ("5", False, False, "E1")
    assert [(e.type, e.status) for e in recorder.events] == [("mcp_tool_call", "completed"),
                                                              ("tool_result", "completed")]
    started = recorder.events[0]
    assert started.metadata["server_name"] == "tools" and started.metadata["tool_name"] == "add"
    assert started.metadata["arguments"] == {"a": 2, "b": 3} and started.content == "5"
    assert recorder.events[1].metadata == {"server_name": "tools", "tool_name": "add", "is_error": False,
                                           "summarized": False, "tool_call_id": "call-1", "evidence_id": "E1"}
    (record,) = recorder.mcp
    assert (record.server, record.tool, record.result, record.raw_size, record.success) == ("tools", "add", "5", 1,
                                                                                          True)
    assert "tools.echo" in record.available_tools


@pytest.mark.parametrize("name, problem", [("tools.nope", "Unknown tool 'tools.nope'"),
                                           ("kafka.topics", "Unknown MCP server 'kafka'"),
                                           ("notdotted", "Unknown MCP server 'notdotted'")])
def test_an_unknown_tool_or_server_is_an_error_result_listing_the_tools(shared_pool, recorder, name, problem) -> None:
    result = make_executor(shared_pool, recorder).execute(call(name))

    assert result.is_error
    assert problem in result.content
    assert "- tools.echo" in result.content and "- tools.big_output" in result.content
    assert recorder.mcp == []
    assert recorder.of_type("tool_result")[0].metadata["is_error"] is True


def test_a_tool_hidden_by_the_selection_is_unknown(shared_pool, recorder) -> None:
    result = make_executor(shared_pool, recorder, tool_filter={"tools": ("echo",)}).execute(call("tools.add", a=1, b=1))

    assert result.is_error and "Unknown tool 'tools.add'" in result.content and "- tools.echo" in result.content


@pytest.mark.parametrize("raw, expected", [("hello world", "hello world"), ('{"text": "json"}', "json"),
                                           ("42", "42")])
def test_a_raw_action_input_goes_to_a_single_parameter_tool(shared_pool, recorder, raw, expected) -> None:
    raw_call = ToolCall.model_construct(id="c", name="tools.echo", arguments=raw)

    assert make_executor(shared_pool, recorder).execute(raw_call).content == expected


def test_a_raw_json_object_input_is_parsed_and_other_text_becomes_input(shared_pool, recorder) -> None:
    executor = make_executor(shared_pool, recorder)

    parsed = executor.execute(ToolCall.model_construct(id="c", name="tools.add", arguments='{"a": 4, "b": 5}'))
    unparsed = executor.execute(ToolCall.model_construct(id="d", name="tools.add", arguments="four and five"))

    assert parsed.content == "9"
    assert unparsed.is_error and recorder.mcp[-1].arguments == {"input": "four and five"}


def test_secrets_are_masked_before_the_recorder_or_the_llm_sees_them(shared_pool, recorder) -> None:
    result = make_executor(shared_pool, recorder).execute(call("tools.get_secret"))

    recorded = everything_recorded(recorder)
    assert not any(secret in recorded or secret in result.content for secret in SECRET_VALUES)
    assert "[MASKED_SECRET_DATA]" in recorder.mcp[0].result and "[MASKED_SECRET_DATA]" in result.content
    assert "kind: Secret" in recorder.events[0].content
    assert recorder.mcp[0].raw_size > len("kind: Secret")


def test_a_tool_error_is_an_error_result_and_a_failed_interaction(shared_pool, recorder) -> None:
    result = make_executor(shared_pool, recorder).execute(call("tools.fail", message="namespace not found"))

    assert result.is_error and "namespace not found" in result.content
    assert recorder.mcp[0].success is False and "namespace not found" in recorder.mcp[0].error_message
    assert recorder.events[0].metadata["is_error"] is True


def test_a_big_result_is_summarized_and_the_raw_masked_result_is_kept(shared_pool, recorder) -> None:
    llm = ScriptedLLM(text="All 133 requests were served in 12ms; no errors.")
    executor = make_executor(shared_pool, recorder, summarizer=make_summarizer(recorder, llm))

    result = executor.execute(call("tools.big_output", n=8000))

    assert result.summarized and not result.is_error
    assert result.content.endswith("All 133 requests were served in 12ms; no errors.")
    assert "summarized" in result.content.splitlines()[0]
    (record,) = recorder.mcp
    assert record.summarized and len(record.result) == record.raw_size == 8000
    assert [e.type for e in recorder.events] == ["mcp_tool_call", "mcp_tool_summary", "tool_result"]
    assert recorder.of_type("tool_result")[0].content == result.content
    (request,) = llm.requests
    assert (request.interaction_type, request.max_output_tokens, request.tools) == ("summarization", 100, [])
    (interaction,) = recorder.llm
    assert interaction.interaction_type == "summarization" and interaction.success
    assert interaction.usage.total_tokens == 120
    assert "CrashLoopBackOff" in repr(interaction.conversation)
    assert interaction.conversation[-1]["content"] == "All 133 requests were served in 12ms; no errors."


def test_a_result_under_the_threshold_is_not_summarized(shared_pool, recorder) -> None:
    llm = ScriptedLLM(text="unused")
    executor = make_executor(shared_pool, recorder, summarizer=make_summarizer(recorder, llm))

    result = executor.execute(call("tools.big_output", n=1900))

    assert not result.summarized and len(result.content) == 1900 and llm.requests == []


def test_a_failed_summary_falls_back_to_the_truncated_result_and_an_error_event(shared_pool, recorder) -> None:
    llm = ScriptedLLM(error="quota exhausted")
    executor = make_executor(shared_pool, recorder, summarizer=make_summarizer(recorder, llm))

    result = executor.execute(call("tools.big_output", n=20_000))

    cap = PROVIDER.max_tool_result_tokens * 4
    assert not result.summarized and not result.is_error
    assert result.content.startswith(recorder.mcp[0].result[:cap]) and len(result.content) < cap + 200
    assert "truncated" in result.content[cap:]
    (error,) = recorder.of_type("error")
    assert "quota exhausted" in error.content
    assert recorder.llm[0].success is False and "quota exhausted" in recorder.llm[0].error_message
    assert recorder.mcp[0].summarized is False and recorder.mcp[0].raw_size == 20_000


def test_a_hanging_tool_becomes_a_timeout_error_within_the_call_timeout(shared_pool, recorder) -> None:
    executor = make_executor(shared_pool, recorder, servers=["slow"])
    executor.list_tools()
    started = time.monotonic()

    result = executor.execute(call("slow.hang", seconds=5))

    assert time.monotonic() - started < 1.0 + 1.0
    assert result.is_error and "timed out" in result.content
    assert recorder.events[0].status == "failed" and recorder.events[0].metadata["error_kind"] == "timeout"
    assert recorder.mcp[0].success is False


def test_the_call_timeout_is_cut_to_the_steps_deadline(shared_pool, recorder) -> None:
    shared_pool.list_tools("tools", SERVERS["tools"])  # started and listed: only the call is left to time
    executor = make_executor(shared_pool, recorder, deadline=time.time() + 1.0)
    started = time.monotonic()

    result = executor.execute(call("tools.hang", seconds=5))

    assert time.monotonic() - started < 2.0
    assert result.is_error and "timed out" in result.content


def test_no_call_is_made_once_the_deadline_has_passed(shared_pool, recorder) -> None:
    shared_pool.list_tools("tools", SERVERS["tools"])
    executor = make_executor(shared_pool, recorder, deadline=time.time() - 1)

    result = executor.execute(call("tools.add", a=1, b=2))

    assert result.is_error and "time budget is exhausted" in result.content


def test_a_tool_that_crashes_twice_is_an_error_result(shared_pool, recorder) -> None:
    result = make_executor(shared_pool, recorder, servers=["crashy"], extra={"crashy": stdio_config()}).execute(
        call("crashy.crash"))

    assert result.is_error and "crashed again after a restart" in result.content
    assert recorder.events[0].status == "failed"


def test_action_tools_are_never_listed_to_other_agents_and_never_run_by_a_call(shared_pool, recorder) -> None:
    """Defense in depth behind the config check: an action tool is hidden from a non-action agent's executor, and
    no executor runs it on the model's call (only an approved proposal's run does)."""
    acting = {"acts": stdio_config(actions=True, action_tools=["add"])}
    hidden = make_executor(shared_pool, recorder, servers=["acts"], extra=acting)
    names = [t.name for t in hidden.list_tools()]
    assert "acts.add" not in names and "acts.echo" in names
    assert hidden.execute(call("acts.add", a=2, b=3)).is_error
    listed = MCPToolExecutor(config=tarsy_config({**SERVERS, **acting}), resolved=resolved_for(["acts"]),
                             recorder=recorder, pool=shared_pool, actions=True)
    assert "acts.add" in [t.name for t in listed.list_tools()]
    refused = listed.execute(call("acts.add", a=2, b=3))
    assert refused.is_error and "is an action tool" in refused.content
    assert not any(m.tool == "add" and m.success for m in recorder.mcp)  # the server never saw the call
    assert listed.run_approved(call("acts.add", a=2, b=3)).content == "5"
