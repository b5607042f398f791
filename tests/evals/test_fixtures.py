"""Recorded tool outputs: how calls match them, what the fixture MCP server answers, what a scenario may contain."""

from __future__ import annotations

import json
import sys
import time

import pytest
import yaml
from mcp import Client

from agents.config.schema import MCPServerConfig
from agents.mcp.demo_cluster import build_server as build_demo_server
from agents.mcp.pool import MCPPool
from evals.fixture_server import build_server
from evals.fixtures import GAP_MARKER, ScenarioError, arguments_match, find_fixture, parse_tools
from evals.runconfig import REPO_ROOT
from evals.scenario import load_all, select

TOOLS = {
    "kubernetes-server.pods_log": [
        {"args": {"namespace": "shop", "name": "web-1", "previous": True}, "result": "FATAL cannot reach db"},
        {"args": {"namespace": "shop", "name": {"regex": "web-.*"}}, "error": 'pods "web-9" not found'},
    ],
    "kubernetes-server.pods_list": [{"match": "exact", "result": "NAME  STATUS\nweb-1  CrashLoopBackOff\n"}],
}


def test_subset_matching_fills_defaults_and_ignores_unlisted_arguments():
    assert arguments_match("pods_log", {"name": "web-1"}, {"name": "web-1", "namespace": "shop", "tail": 20})
    assert arguments_match("pods_log", {"previous": False}, {"name": "web-1"})  # `previous` defaults to False
    assert not arguments_match("pods_log", {"previous": True}, {"name": "web-1"})
    assert arguments_match("pods_log", {"name": {"regex": "web-[0-9]"}}, {"name": "web-7"})
    assert not arguments_match("pods_log", {"name": {"regex": "web"}}, {"name": "web-7"})  # the whole value


def test_exact_matching_allows_only_defaults_besides_the_listed_arguments():
    assert arguments_match("pods_list", {}, {}, exact=True)
    assert arguments_match("pods_list", {}, {"labelSelector": ""}, exact=True)  # explicitly the default
    assert not arguments_match("pods_list", {}, {"labelSelector": "app=web"}, exact=True)


def test_first_matching_fixture_in_file_order_answers():
    fixtures = parse_tools(TOOLS)
    assert find_fixture(fixtures, "kubernetes-server.pods_log",
                        {"namespace": "shop", "name": "web-1", "previous": True}).result == "FATAL cannot reach db"
    assert find_fixture(fixtures, "kubernetes-server.pods_log", {"namespace": "shop", "name": "web-1"}).error
    assert find_fixture(fixtures, "kubernetes-server.pods_log", {"namespace": "kube-system", "name": "web-1"}) is None


def test_invalid_tools_file_lists_every_problem():
    with pytest.raises(ScenarioError) as err:
        parse_tools({
            "kubernetes-server.pods_tail": [{"result": "x"}],
            "pods_log": [{"result": "x"}],
            "kubernetes-server.pods_get": [{"args": {"nmae": "web-1"}, "result": "x"},
                                           {"args": {"name": {"regex": "("}}, "result": "x"},
                                           {"args": {"name": "web-1"}},
                                           {"args": {"name": "web-1"}, "result": "x", "error": "y"}],
            "kubernetes-server.pods_log": [{"args": {"tail": "many"}, "result": "x"}],
        })
    problems = "\n".join(err.value.problems)
    assert "unknown tool 'pods_tail'" in problems
    assert "'pods_log' is not a `server.tool` name" in problems
    assert "unknown argument 'nmae'" in problems
    assert "invalid regex" in problems
    assert problems.count("give exactly one of `result`") == 2
    assert "argument 'tail'" in problems


@pytest.mark.asyncio
async def test_fixture_server_offers_the_kubernetes_tools_and_answers_from_fixtures():
    async with Client(build_demo_server()) as demo, Client(build_server(parse_tools(TOOLS), "kubernetes-server")) as fx:
        expected = [(t.name, t.description, json.dumps(t.input_schema, sort_keys=True))
                    for t in (await demo.list_tools()).tools]
        offered = [(t.name, t.description, json.dumps(t.input_schema, sort_keys=True))
                   for t in (await fx.list_tools()).tools]
        assert offered == expected
        found = await fx.call_tool("pods_log", {"namespace": "shop", "name": "web-1", "previous": True})
        assert (found.is_error, found.content[0].text) == (False, "FATAL cannot reach db")
        failed = await fx.call_tool("pods_log", {"namespace": "shop", "name": "web-9"})
        assert (failed.is_error, failed.content[0].text) == (True, 'pods "web-9" not found')  # verbatim
        gap = await fx.call_tool("pods_list", {"labelSelector": "app=web"})
        assert gap.is_error
        assert gap.content[0].text.startswith(GAP_MARKER)
        assert '{"labelSelector": "app=web"}' in gap.content[0].text


def test_every_shipped_scenario_loads():
    scenarios = load_all(select(None))
    assert len(scenarios) >= 40
    for scenario in scenarios:
        assert scenario.servers == ["kubernetes-server"], scenario.name
        assert scenario.expect.budgets.max_iterations, scenario.name
    assert sum(bool(s.expect.forbidden) for s in scenarios if s.name.startswith("herring-")) >= 5


def test_an_idle_fixture_server_exits_and_the_pool_starts_it_again(tmp_path):
    tools = tmp_path / "tools.yaml"
    tools.write_text(yaml.safe_dump(TOOLS))
    cfg = MCPServerConfig(transport={"type": "stdio", "command": sys.executable, "env": {"PYTHONPATH": str(REPO_ROOT)},
                                     "args": ["-m", "evals.fixture_server", "--tools", str(tools),
                                              "--server", "kubernetes-server", "--idle-exit", "1"]})
    pool = MCPPool()
    try:
        assert pool.call_tool("fx", cfg, "pods_list", {}).text.startswith("NAME")
        time.sleep(2.5)  # idle: the server exits
        assert pool.call_tool("fx", cfg, "pods_list", {}).text.startswith("NAME")
        assert pool.status()["fx"].restarts == 1
    finally:
        pool.shutdown()
