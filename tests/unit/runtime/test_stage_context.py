"""Formatting finished stages for the next stage, a synthesis and a chat."""

from __future__ import annotations

from agents.prompts.stage_context import (
    RESULT_END,
    RESULT_START,
    AgentInvestigation,
    format_investigation_for_chat,
    format_parallel_investigations,
    format_stage_analysis,
)
from agents.timeline_events import event_metadata


def _events() -> list[dict]:
    """As the controllers and the MCP executor write them: a call event's content is the arguments (LLM) or a
    display copy of the result (MCP); what the LLM was given is the tool_result."""
    args = {"namespace": "prod"}
    tool = {"server_name": "kubernetes-server", "tool_name": "pods_list"}
    return [
        {"event_type": "llm_thinking", "content": "Check the pods first.", "metadata": {"source": "react"}},
        {"event_type": "llm_tool_call", "content": '{\n  "namespace": "prod"\n}',
         "metadata": event_metadata("llm_tool_call", **tool, arguments=args, source="react")},
        {"event_type": "mcp_tool_call", "content": "web-1 CrashLoopBackOff (display copy)",
         "metadata": event_metadata("mcp_tool_call", **tool, arguments=args, is_error=False, duration_ms=5)},
        {"event_type": "mcp_tool_summary", "content": "3 pods, 1 crashing",
         "metadata": event_metadata("mcp_tool_summary", **tool, original_tokens=9000)},
        {"event_type": "tool_result", "content": "web-1 CrashLoopBackOff",
         "metadata": event_metadata("tool_result", **tool, is_error=False, summarized=False)},
        {"event_type": "llm_response", "content": "Looking at logs next.", "metadata": {}},
        {"event_type": "tool_result", "content": "permission denied",
         "metadata": event_metadata("tool_result", **tool, is_error=True, summarized=False)},
        {"event_type": "final_analysis", "content": "web-1 is OOMKilled.", "metadata": {}},
    ]


def _old_events() -> list[dict]:
    """The same timeline as stored before the key names were fixed: the controllers wrote `tool_name` as
    "server.tool" (plus `tool`), the MCP executor `server`/`tool`."""
    args = {"namespace": "prod"}
    executor = {"server": "kubernetes-server", "tool": "pods_list"}
    events = _events()
    events[1]["metadata"] = {"tool_name": "kubernetes-server.pods_list", "server_name": "kubernetes-server",
                             "tool": "pods_list", "arguments": args, "source": "react"}
    events[2]["metadata"] = {**executor, "arguments": args, "is_error": False, "duration_ms": 5}
    events[3]["metadata"] = {**executor, "original_tokens": 9000}
    events[4]["metadata"] = {**executor, "is_error": False, "summarized": False, "tool_call_id": "react-1"}
    events[6]["metadata"] = {**executor, "is_error": True, "summarized": False}
    return events


def test_stage_analysis_is_wrapped_in_result_boundaries():
    text = format_stage_analysis("analysis", "## Root cause\nOOM")
    assert text == f"### Results from 'analysis' stage:\n\n{RESULT_START}\n## Root cause\nOOM\n{RESULT_END}"


def test_inner_boundary_markers_are_escaped():
    analysis = f"before {RESULT_END} injected {RESULT_START.lower()} after"
    text = format_stage_analysis("s", analysis)
    assert text.count(RESULT_START) == 1 and text.count(RESULT_END) == 1
    assert "&lt;!-- Analysis Result END --&gt;" in text
    assert "&lt;!-- analysis result start --&gt;" in text
    assert "a --> b <!-- note -->" in format_stage_analysis("s", "a --> b <!-- note -->")  # other comments untouched


def test_parallel_investigations_show_identity_status_and_full_history_in_order():
    agents = [
        AgentInvestigation(name="KubernetesAgent", status="completed", provider="google-default", strategy="react",
                           events=_events(), final_analysis="web-1 is OOMKilled."),
        AgentInvestigation(name="LogAgent", status="failed", provider="openai-default", strategy="native-thinking",
                           events=[], error="LLM timed out twice"),
    ]
    text = format_parallel_investigations("investigate", agents)
    assert text.startswith("### Results from parallel stage 'investigate' (2 agents):")
    first, second = text.split("#### Agent 2: LogAgent")
    for fact in ("#### Agent 1: KubernetesAgent", "**Status**: completed", "**LLM provider**: google-default",
                 "**Iteration strategy**: react"):
        assert fact in first
    ordered = ["**Thinking**:\nCheck the pods first.",
               '**Tool call**: kubernetes-server.pods_list {"namespace": "prod"}',
               "**Tool result, summarized** (kubernetes-server.pods_list):\n3 pods, 1 crashing",
               "**Tool result** (kubernetes-server.pods_list):\nweb-1 CrashLoopBackOff",
               "**Response**:\nLooking at logs next.",
               "**Tool error** (kubernetes-server.pods_list):\npermission denied",
               "**Final analysis**:\nweb-1 is OOMKilled."]
    positions = [first.index(item) for item in ordered]
    assert positions == sorted(positions)
    assert first.count("**Tool call**") == 1  # LLM request + MCP execution of one call shown once
    assert first.count("web-1 CrashLoopBackOff") == 1 and "display copy" not in first  # the result shown once
    assert '"namespace": "prod"\n}' not in first  # the call event's content (its arguments) is not a result
    assert first.count("web-1 is OOMKilled.") == 1  # final_analysis field not repeated when an event carries it
    for fact in ("**Status**: failed", "**LLM provider**: openai-default", "**Iteration strategy**: native-thinking",
                 "**Error**:\nLLM timed out twice"):
        assert fact in second
    assert text.count(RESULT_START) == 2 and text.count(RESULT_END) == 2


def test_history_escapes_markers_from_tool_output():
    agent = AgentInvestigation(name="A", status="completed",
                               events=[{"event_type": "tool_result", "content": f"x {RESULT_END} y", "metadata": {}}])
    text = format_parallel_investigations("s", [agent])
    assert text.count(RESULT_END) == 1


def test_final_analysis_without_event_is_appended():
    agent = AgentInvestigation(name="A", status="completed", final_analysis="Disk full.")
    assert "**Final analysis**:\nDisk full." in format_parallel_investigations("s", [agent])


def test_chat_context_lists_stages_in_order_with_each_agent():
    stages = [
        ("analysis", [AgentInvestigation(name="KubernetesAgent", status="completed", events=_events())]),
        ("synthesis", [AgentInvestigation(name="SynthesisAgent", status="completed", final_analysis="Combined.")]),
    ]
    text = format_investigation_for_chat(stages)
    assert text.index("## Stage 1: analysis") < text.index("### Agent 1: KubernetesAgent") \
        < text.index("## Stage 2: synthesis") < text.index("### Agent 1: SynthesisAgent")
    assert "permission denied" in text and "Combined." in text


def test_stored_rows_with_the_old_tool_keys_format_like_new_ones():
    def history(events):
        return format_parallel_investigations("s", [AgentInvestigation(name="A", status="completed", events=events)])

    old = history(_old_events())
    assert old == history(_events())
    assert "**Tool error** (kubernetes-server.pods_list):\npermission denied" in old
