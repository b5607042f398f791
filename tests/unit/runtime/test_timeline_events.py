"""Timeline event metadata: one typed shape per event type, refused when written wrong, read back from any age."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agents.timeline_events import (
    ErrorMetadata,
    MCPToolCallMetadata,
    TimelineEventType,
    ToolResultMetadata,
    event_metadata,
    read_metadata,
)


@pytest.mark.parametrize("event_type", ["mcp_tool_call", "tool_result", "llm_tool_call", "mcp_tool_summary"])
def test_a_tool_event_written_with_the_old_keys_is_refused(event_type):
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        event_metadata(event_type, server="k8s", tool="pods_list")


@pytest.mark.parametrize("event_type", ["mcp_tool_call", "tool_result", "llm_tool_call", "mcp_tool_summary"])
def test_a_tool_event_must_name_its_server_and_tool(event_type):
    with pytest.raises(ValidationError, match="needs server_name and tool_name"):
        event_metadata(event_type, tool_name="pods_list")


def test_values_of_the_wrong_type_and_unknown_types_are_refused():
    with pytest.raises(ValidationError, match="duration_ms"):
        event_metadata("mcp_tool_call", server_name="k8s", tool_name="pods_list", duration_ms="fast")
    with pytest.raises(ValidationError, match="source"):
        event_metadata("llm_thinking", source="guess")
    with pytest.raises(ValueError, match="not a valid TimelineEventType"):
        event_metadata("tool_call", server_name="k8s", tool_name="pods_list")


def test_written_metadata_keeps_the_given_fields_only():
    assert event_metadata(TimelineEventType.TOOL_RESULT, server_name="k8s", tool_name="pods_list", is_error=False,
                          tool_call_id="c1") == {"server_name": "k8s", "tool_name": "pods_list", "is_error": False,
                                                 "tool_call_id": "c1"}
    assert event_metadata("executive_summary") == {}


def test_a_name_the_model_made_up_is_still_recorded():
    """The server and tool come from the model's reply: a name without a server part is shown, not refused."""
    assert event_metadata("llm_tool_call", server_name="get_pods", tool_name="") == {"server_name": "get_pods",
                                                                                     "tool_name": ""}


@pytest.mark.parametrize("stored", [
    {"server": "k8s", "tool": "pods_list", "is_error": True},  # the MCP executor's old keys
    {"tool_name": "k8s.pods_list", "server_name": "k8s", "tool": "pods_list", "is_error": True},  # the controllers'
    {"tool_name": "k8s.pods_list", "is_error": True},
    {"server_name": "k8s", "tool_name": "pods_list", "is_error": True},  # as written now
], ids=["executor", "controllers", "qualified-only", "current"])
def test_stored_rows_of_every_age_read_as_one_shape(stored):
    metadata = read_metadata("tool_result", stored)
    assert isinstance(metadata, ToolResultMetadata)
    assert (metadata.server_name, metadata.tool_name, metadata.qualified_name, metadata.is_error) == (
        "k8s", "pods_list", "k8s.pods_list", True)


def test_reading_never_fails_on_a_bad_row():
    metadata = read_metadata("mcp_tool_call", {"server": "k8s", "duration_ms": "soon", "surprise": 1})
    assert isinstance(metadata, MCPToolCallMetadata)
    assert (metadata.qualified_name, metadata.duration_ms) == ("k8s", None)
    assert read_metadata("mcp_tool_call", None).qualified_name == ""
    assert read_metadata("tool_result", {"server": 7, "tool_name": ["x"], "tool": "pods_list"}).dump() == {
        "server_name": "", "tool_name": "pods_list"}
    assert read_metadata("renamed_type", {"x": 1}).dump() == {}
    error = read_metadata("error", {"server": "k8s", "source": "mcp", "timeout": True})
    assert isinstance(error, ErrorMetadata) and (error.server_name, error.timeout) == ("k8s", True)
