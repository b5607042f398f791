"""A server's call slots: a hundred iteration threads must not overrun one stdio server with calls at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from agents.config.schema import NETWORK_CALL_SLOTS, STDIO_CALL_SLOTS, MCPServerConfig
from agents.mcp.pool import MCPError, MCPPool

from .conftest import stdio_config, unique_name

pytestmark = pytest.mark.timeout(60)


def _peaks(pool: MCPPool, name: str, cfg: MCPServerConfig, calls: int, seconds: float) -> list[int]:
    pool.list_tools(name, cfg)  # started before the burst: the start is not what is measured
    with ThreadPoolExecutor(calls) as threads:
        results = list(threads.map(lambda _: pool.call_tool(name, cfg, "overlap", {"seconds": seconds}),
                                   range(calls)))
    return [int(result.text) for result in results]


def test_calls_beyond_the_servers_slots_wait_for_one(shared_pool: MCPPool) -> None:
    name = unique_name("slots")
    assert max(_peaks(shared_pool, name, stdio_config(max_concurrent_calls=2), 8, 0.3)) == 2
    assert shared_pool.status()[name].in_flight == 0


def test_the_server_runs_calls_at_once_up_to_its_slots(shared_pool: MCPPool) -> None:
    """The check above could pass with a server that answers one call at a time; this one shows it does not."""
    name = unique_name("wide")
    assert max(_peaks(shared_pool, name, stdio_config(max_concurrent_calls=8), 8, 0.5)) >= 6


def test_a_stdio_server_gets_few_slots_by_default_a_network_one_more(shared_pool: MCPPool) -> None:
    assert stdio_config().call_slots() == STDIO_CALL_SLOTS
    network = MCPServerConfig(transport={"type": "http", "url": "http://127.0.0.1:1/mcp"})
    assert network.call_slots() == NETWORK_CALL_SLOTS > STDIO_CALL_SLOTS
    name = unique_name("default")
    assert max(_peaks(shared_pool, name, stdio_config(), STDIO_CALL_SLOTS * 2, 0.3)) == STDIO_CALL_SLOTS


def test_a_call_that_cannot_get_a_slot_within_its_timeout_fails_as_a_timeout(shared_pool: MCPPool) -> None:
    name = unique_name("busy")
    cfg = stdio_config(max_concurrent_calls=1)
    shared_pool.list_tools(name, cfg)
    with ThreadPoolExecutor(1) as thread:
        holder = thread.submit(shared_pool.call_tool, name, cfg, "overlap", {"seconds": 3})
        with pytest.raises(MCPError) as caught:
            shared_pool.call_tool(name, cfg, "echo", {"text": "hi"}, timeout=0.5)
        assert holder.result().text == "1"
    assert caught.value.kind == "timeout"
    assert "1 call slots stayed busy" in caught.value.message
    assert shared_pool.status()[name].waiting == 0
