"""Outside text from MCP servers and runbook hosts is masked where it enters: real servers, no DB."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agents.config.schema import MCPServerConfig
from agents.llm.types import ToolCall
from agents.mcp import health
from agents.mcp.executor import MCPToolExecutor
from agents.mcp.pool import MCPPool
from agents.runbooks import clear_runbook_cache, fetch_runbook
from tests.unit.mcp.conftest import InMemoryRecorder, resolved_for, stdio_config, tarsy_config

pytestmark = pytest.mark.timeout(90)

HOSTILE = str(Path(__file__).resolve().parents[2] / "fakes" / "mcp_servers" / "hostile_server.py")
PASSWORD = "hunter2xyz"
TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyz"
SECRET_ERROR = f"cannot log in to the cluster: password={PASSWORD} token: {TOKEN}"


def hostile(mode: str, *args: str) -> MCPServerConfig:
    return MCPServerConfig(transport={"type": "stdio", "command": sys.executable, "args": [HOSTILE, mode, *args]})


def recorded(recorder: InMemoryRecorder) -> str:
    return repr([asdict(e) for e in recorder.events]) + repr(recorder.mcp) + repr(recorder.llm)


@pytest.fixture
def pool() -> Iterator[MCPPool]:
    pool = MCPPool()
    health.clear_cache()
    yield pool
    pool.shutdown()
    health.clear_cache()


@pytest.mark.parametrize("mode", ["refuse-start", "fail-list"])
def test_a_server_failing_with_a_secret_shows_masked_in_health_and_pool_state(pool, mode):
    config = tarsy_config({"leaky": hostile(mode, SECRET_ERROR)})

    (report,) = health.check_servers(config, pool)
    problems = health.known_problems(config, pool)
    state = pool.status()["leaky"]

    assert report["status"] == "error" and "cannot log in to the cluster" in report["error"]
    assert "__MASKED_" in report["error"]
    for text in (report["error"], *problems, state.last_error):
        assert PASSWORD not in text and TOKEN not in text, text


def test_a_server_failing_to_list_tools_is_masked_on_the_timeline_and_for_the_model(pool):
    recorder = InMemoryRecorder()
    executor = MCPToolExecutor(config=tarsy_config({"leaky": hostile("fail-list", SECRET_ERROR)}),
                               resolved=resolved_for(["leaky"]), recorder=recorder, pool=pool)

    assert executor.list_tools() == []
    result = executor.execute(ToolCall(id="c1", name="leaky.get_pods", arguments={}))

    (warning,) = recorder.of_type("error")
    assert "cannot log in to the cluster" in warning.content and "unavailable" in result.content
    assert PASSWORD not in recorded(recorder) and TOKEN not in recorded(recorder)
    assert PASSWORD not in result.content and TOKEN not in result.content


def test_tool_call_arguments_are_stored_masked_while_the_server_gets_them_as_written(pool):
    recorder = InMemoryRecorder()
    # No masking of this server's results: its echo shows exactly what it received.
    servers = {"tools": stdio_config(data_masking={"enabled": False})}
    executor = MCPToolExecutor(config=tarsy_config(servers), resolved=resolved_for(["tools"]), recorder=recorder,
                               pool=pool)

    result = executor.execute(ToolCall(id="c1", name="tools.echo", arguments={"text": f"password: {PASSWORD}"}))

    assert result.content == f"password: {PASSWORD}"  # the call carried the real argument
    (interaction,) = recorder.mcp
    (call_event,) = recorder.of_type("mcp_tool_call")
    for stored in (interaction.arguments, call_event.metadata["arguments"]):
        assert set(stored) == {"text"} and PASSWORD not in stored["text"] and "__MASKED_" in stored["text"]


def test_nul_characters_in_tool_output_are_replaced_before_anything_is_kept(pool):
    recorder = InMemoryRecorder()
    executor = MCPToolExecutor(config=tarsy_config({"bin": hostile("nul")}), resolved=resolved_for(["bin"]),
                               recorder=recorder, pool=pool)

    result = executor.execute(ToolCall(id="c1", name="bin.dump", arguments={}))

    assert not result.is_error and "binary" in result.content and "tail" in result.content
    assert "\x00" not in result.content and "\x00" not in recorded(recorder)
    assert "binary" in recorder.mcp[0].result


# ---- runbooks ------------------------------------------------------------------------------------------------------


RUNBOOK = f"# DB login failures\n\nThe break-glass login is admin with password: {PASSWORD}\n"


@pytest.fixture
def runbook_host() -> Iterator[tuple[str, list[str]]]:
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            requests.append(self.path)
            body = RUNBOOK.encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    clear_runbook_cache()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", requests
    httpd.shutdown()
    clear_runbook_cache()


def test_fetched_runbook_content_is_masked_before_the_prompt(runbook_host):
    base, _ = runbook_host

    result = fetch_runbook(f"{base}/db.md", allowed_domains=["127.0.0.1"], default="default")

    assert result.source == "url" and "break-glass login is admin" in result.content
    assert PASSWORD not in result.content


def test_a_runbook_url_whose_credentials_were_masked_is_not_fetched(runbook_host):
    base, requests = runbook_host
    stored = f"{base}/db.md?token=__MASKED_URL_CREDENTIAL__"

    result = fetch_runbook(stored, allowed_domains=["127.0.0.1"], default="default")

    assert (result.source, result.content) == ("default", "default") and requests == []
    assert "credentials were masked" in result.warning


def test_a_runbook_warning_never_shows_the_urls_credentials(runbook_host):
    base, _ = runbook_host

    result = fetch_runbook(f"{base.replace('127.0.0.1', 'evil.example')}/x?access_token=abc123secret",
                           allowed_domains=["127.0.0.1"], default="default")

    assert result.source == "default" and "not in the allowed runbook domains" in result.warning
    assert "abc123secret" not in result.warning
