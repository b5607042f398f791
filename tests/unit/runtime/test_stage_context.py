"""Formatting finished stages for the next stage, a synthesis and a chat."""

from __future__ import annotations

from controllers.stage_context import (
    RESULT_END,
    RESULT_START,
    AgentInvestigation,
    format_investigation_for_chat,
    format_parallel_investigations,
    format_stage_analysis,
)


def _events() -> list[dict]:
    args = {"namespace": "prod"}
    meta = {"tool_name": "pods_list", "server_name": "kubernetes-server", "arguments": args}
    return [
        {"event_type": "llm_thinking", "content": "Check the pods first.", "metadata": {"source": "react"}},
        {"event_type": "llm_tool_call", "content": "", "metadata": meta},
        {"event_type": "mcp_tool_call", "content": "", "metadata": meta},
        {"event_type": "tool_result", "content": "web-1 CrashLoopBackOff", "metadata": meta},
        {"event_type": "mcp_tool_summary", "content": "3 pods, 1 crashing", "metadata": meta},
        {"event_type": "llm_response", "content": "Looking at logs next.", "metadata": {}},
        {"event_type": "tool_result", "content": "permission denied", "metadata": {**meta, "is_error": True}},
        {"event_type": "final_analysis", "content": "web-1 is OOMKilled.", "metadata": {}},
    ]


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
               "**Tool result** (kubernetes-server.pods_list):\nweb-1 CrashLoopBackOff",
               "**Tool result, summarized** (kubernetes-server.pods_list):\n3 pods, 1 crashing",
               "**Response**:\nLooking at logs next.",
               "**Tool error** (kubernetes-server.pods_list):\npermission denied",
               "**Final analysis**:\nweb-1 is OOMKilled."]
    positions = [first.index(item) for item in ordered]
    assert positions == sorted(positions)
    assert first.count("**Tool call**") == 1  # LLM request + MCP execution of one call shown once
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
