"""/health reports MCP servers that fail to start, without blocking the probe on them."""

from __future__ import annotations

import pytest
from django.test import Client

from agents.mcp import health as mcp_health
from tests.support.configdir import write_config
from tests.support.processes import wait_for

pytestmark = [pytest.mark.django_db]


def test_a_server_that_cannot_start_shows_in_health_warnings(tmp_path):
    write_config(tmp_path, tarsy={"mcp_servers": {"broken": {"transport": {
        "type": "stdio", "command": "/nonexistent/mcp-server-binary"}}}})
    mcp_health.clear_cache()
    client = Client()

    def warned():
        warnings = client.get("/health").json()["warnings"]
        return [w for w in warnings if w.startswith("MCP server 'broken'")]

    problems = wait_for(warned, timeout=20, interval=0.3, message="the MCP failure in /health")
    assert "broken" in problems[0]
    mcp_health.clear_cache()
