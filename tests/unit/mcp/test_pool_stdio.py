"""The pool against a real stdio MCP server: listing, calls, reuse, crashes, hangs, start-up failures."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from agents.mcp.pool import MCPError, MCPPool, get_pool

from .conftest import pid_alive, stdio_config, unique_name

pytestmark = pytest.mark.timeout(60)


def test_tools_are_listed_with_canonical_names_and_their_input_schema(shared_pool: MCPPool) -> None:
    name = "calls"
    tools = {t.name: t for t in shared_pool.list_tools(name, stdio_config())}

    assert {f"{name}.echo", f"{name}.add", f"{name}.pid", f"{name}.hang"} <= set(tools)
    add = tools[f"{name}.add"]
    assert add.description == "Add two integers."
    assert add.parameters["properties"] == {"a": {"title": "A", "type": "integer"},
                                            "b": {"title": "B", "type": "integer"}}
    assert add.parameters["required"] == ["a", "b"]


def test_a_call_returns_the_text_content(shared_pool: MCPPool) -> None:
    result = shared_pool.call_tool("calls", stdio_config(), "add", {"a": 2, "b": 40})

    assert (result.text, result.is_error, result.raw_size) == ("42", False, 2)
    assert result.duration_ms >= 0


def test_a_structured_result_arrives_as_json_text(shared_pool: MCPPool) -> None:
    result = shared_pool.call_tool("calls", stdio_config(), "pod_info", {"namespace": "prod", "pod": "web-0"})

    assert json.loads(result.text) == {"namespace": "prod", "pod": "web-0", "phase": "Running"}


def test_a_tool_error_is_a_result_marked_as_error(shared_pool: MCPPool) -> None:
    result = shared_pool.call_tool("calls", stdio_config(), "fail", {"message": "quota exceeded"})

    assert result.is_error
    assert "quota exceeded" in result.text


def test_stdio_env_is_the_config_env_over_an_allow_list(shared_pool: MCPPool, monkeypatch) -> None:
    monkeypatch.setenv("TARSY_TEST_INHERITED", "from-parent")
    cfg = stdio_config(transport={"env": {"TARSY_TEST_EXTRA": "from-config"}})
    name = unique_name("env")

    assert shared_pool.call_tool(name, cfg, "env_value", {"name": "TARSY_TEST_EXTRA"}).text == "from-config"
    assert shared_pool.call_tool(name, cfg, "env_value", {"name": "TARSY_TEST_INHERITED"}).text == "<unset>"


def test_one_hundred_sequential_calls_reuse_one_server_process(shared_pool: MCPPool) -> None:
    name, cfg = "calls", stdio_config()
    started = time.monotonic()

    pids = {shared_pool.call_tool(name, cfg, "pid", {}).text for _ in range(100)}

    assert len(pids) == 1
    assert time.monotonic() - started < 20  # ~1 s per call would mean a spawn per call


def test_calls_from_many_threads_share_the_server_and_all_answer(shared_pool: MCPPool) -> None:
    name, cfg = "calls", stdio_config()
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            results[i] = shared_pool.call_tool(name, cfg, "add", {"a": i, "b": 1000}).text
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)

    assert errors == []
    assert results == {i: str(i + 1000) for i in range(24)}
    assert shared_pool.status()[name].restarts == 0


def test_a_crash_is_retried_once_on_a_restarted_server_and_then_reported(shared_pool: MCPPool) -> None:
    name, cfg = unique_name("crash"), stdio_config()
    first_pid = int(shared_pool.call_tool(name, cfg, "pid", {}).text)

    with pytest.raises(MCPError) as failure:
        shared_pool.call_tool(name, cfg, "crash", {})

    assert failure.value.kind == "unavailable"
    assert "crashed again after a restart" in failure.value.message
    assert not pid_alive(first_pid)
    next_pid = int(shared_pool.call_tool(name, cfg, "pid", {}).text)
    assert next_pid != first_pid
    assert shared_pool.status()[name].restarts == 2


def test_a_transient_crash_is_healed_by_the_restart_and_retry(shared_pool: MCPPool, tmp_path: Path) -> None:
    name, cfg = unique_name("flaky"), stdio_config()
    first_pid = shared_pool.call_tool(name, cfg, "pid", {}).text

    result = shared_pool.call_tool(name, cfg, "crash_once", {"flag_path": str(tmp_path / "crashed")})

    assert not result.is_error
    assert result.text.startswith("recovered in ")
    assert result.text.removeprefix("recovered in ") != first_pid
    assert (tmp_path / "crashed").read_text() == first_pid


def test_a_hanging_tool_times_out_within_the_limit_and_the_healthy_session_is_kept(shared_pool: MCPPool) -> None:
    name, cfg = unique_name("hang"), stdio_config(call_timeout=1.5)
    pid_before = shared_pool.call_tool(name, cfg, "pid", {}).text
    started = time.monotonic()

    with pytest.raises(MCPError) as failure:
        shared_pool.call_tool(name, cfg, "hang", {"seconds": 30})

    elapsed = time.monotonic() - started
    assert failure.value.kind == "timeout"
    assert 1.4 < elapsed < 1.5 + 1.0
    assert shared_pool.call_tool(name, cfg, "pid", {}).text == pid_before  # still answers pings: not restarted


@pytest.mark.timeout(120)
def test_a_wedged_server_times_out_and_is_restarted_for_the_next_call(shared_pool: MCPPool) -> None:
    name, cfg = unique_name("wedged"), stdio_config(call_timeout=1.0)
    pid_before = int(shared_pool.call_tool(name, cfg, "pid", {}).text)
    started = time.monotonic()

    with pytest.raises(MCPError) as failure:
        shared_pool.call_tool(name, cfg, "freeze", {"seconds": 60})

    assert failure.value.kind == "timeout"
    assert time.monotonic() - started < 30  # the call's 1 s timeout ended it, not the tool's 60 s freeze
    # The ping probe (1 s) decides the session is wedged, then a new server is started: on a loaded machine that
    # takes seconds, so the next calls get a generous limit (the frozen server never answers within any of them).
    deadline = time.monotonic() + 60
    pid_after = pid_before
    while pid_after == pid_before and time.monotonic() < deadline:
        pid_after = int(shared_pool.call_tool(name, cfg, "pid", {}, timeout=30).text)
    assert pid_after != pid_before


def test_a_per_call_timeout_overrides_the_configured_one(shared_pool: MCPPool) -> None:
    name, cfg = "calls", stdio_config()
    shared_pool.list_tools(name, cfg)
    started = time.monotonic()

    with pytest.raises(MCPError):
        shared_pool.call_tool(name, cfg, "hang", {"seconds": 5}, timeout=1.0)

    assert time.monotonic() - started < 2.0


def test_a_server_that_cannot_be_spawned_is_unavailable(shared_pool: MCPPool) -> None:
    cfg = stdio_config(transport={"command": "/nonexistent/mcp-server-binary"})

    with pytest.raises(MCPError) as failure:
        shared_pool.list_tools(unique_name("missing"), cfg)

    assert failure.value.kind == "unavailable"
    assert "failed to start" in failure.value.message


def test_a_server_that_never_initializes_fails_within_the_init_timeout(shared_pool: MCPPool) -> None:
    cfg = stdio_config(transport={"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"],
                                  "timeout": 1.0})
    started = time.monotonic()

    with pytest.raises(MCPError) as failure:
        shared_pool.call_tool(unique_name("mute"), cfg, "pid", {})

    assert failure.value.kind == "timeout"
    assert "initialize within 1s" in failure.value.message
    assert time.monotonic() - started < 1.0 + 1.0  # closing the mute process happens in the background


def test_status_reports_each_started_server(shared_pool: MCPPool) -> None:
    name, cfg = unique_name("status"), stdio_config()
    shared_pool.list_tools(name, cfg)
    shared_pool.call_tool(name, cfg, "fail", {})

    status = shared_pool.status()[name]

    assert (status.transport, status.state, status.restarts) == ("stdio", "running", 0)
    assert status.tool_count is not None and status.tool_count >= 10
    assert status.calls == 1


def test_shutdown_stops_every_server_process_and_rejects_later_use(pool: MCPPool) -> None:
    pids = [int(pool.call_tool(n, stdio_config(), "pid", {}).text) for n in ("a", "b")]

    pool.shutdown()

    assert not any(pid_alive(p) for p in pids)
    with pytest.raises(MCPError) as failure:
        pool.call_tool("a", stdio_config(), "pid", {})
    assert failure.value.kind == "unavailable"


def test_the_process_pool_is_a_singleton_until_shut_down() -> None:
    first = get_pool()
    assert get_pool() is first
    first.shutdown()
    assert get_pool() is not first
    get_pool().shutdown()
