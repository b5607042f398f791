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
from evals.scenario import Expect, load_all, select

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
        assert offered[:len(expected)] == expected  # the demo cluster's tools, then the Metrics Server's
        assert [name for name, _, _ in offered[len(expected):]] == ["pods_top", "nodes_top"]
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
    assert len(scenarios) >= 68
    for scenario in scenarios:
        assert scenario.servers[0] == "kubernetes-server", scenario.name
        assert set(scenario.servers) <= {"kubernetes-server", "prometheus-server"}, scenario.name
        assert scenario.expect.budgets.max_iterations, scenario.name
    assert sum(bool(s.expect.forbidden) for s in scenarios if s.name.startswith("herring-")) >= 10
    assert sum(s.expect.expect == "abstain" for s in scenarios) >= 5
    assert sum("prometheus-server" in s.servers for s in scenarios) >= 8


METRICS = {
    "kubernetes-server.pods_top": [
        {"args": {"all_namespaces": False, "namespace": "shop"},
         "result": "POD  CPU(cores)  MEMORY(bytes)\nweb-1  998m  412Mi\n"},
    ],
    "kubernetes-server.nodes_top": [
        {"args": {"name": "node-a"},
         "result": "NAME  CPU(cores)  CPU%  MEMORY(bytes)  MEMORY%\nnode-a  3811m  97%  9Gi  61%\n"},
    ],
    "prometheus-server.execute_query": [
        {"args": {"query": {"regex": r"histogram_quantile\(0\.99, .*checkout.*"}},
         "result": '{"resultType": "vector", "result": [{"metric": {}, "value": [1717420000, "2.31"]}]}'},
    ],
    "prometheus-server.execute_range_query": [
        {"args": {"query": "process_resident_memory_bytes{job=\"cart\"}", "step": "5m"},
         "result": '{"resultType": "matrix", "result": []}'},
    ],
    "prometheus-server.list_metrics": [{"result": '["http_requests_total", "up"]'}],
}


@pytest.mark.asyncio
async def test_metrics_tools_answer_from_fixtures_and_unrecorded_queries_are_gaps():
    fixtures = parse_tools(METRICS)
    async with Client(build_server(fixtures, "kubernetes-server")) as k8s, \
            Client(build_server(fixtures, "prometheus-server")) as prom:
        top = await k8s.call_tool("pods_top", {"all_namespaces": False, "namespace": "shop"})
        assert (top.is_error, top.content[0].text.splitlines()[1]) == (False, "web-1  998m  412Mi")
        assert (await k8s.call_tool("nodes_top", {"name": "node-a"})).content[0].text.startswith("NAME")
        all_pods = await k8s.call_tool("pods_top", {})  # all_namespaces defaults to true: not the namespaced fixture
        assert all_pods.is_error and all_pods.content[0].text.startswith(GAP_MARKER)

        assert [t.name for t in (await prom.list_tools()).tools] == [
            "execute_query", "execute_range_query", "list_metrics", "get_metric_metadata", "get_targets"]
        query = "histogram_quantile(0.99, sum by (le) (rate(http_req_duration_seconds_bucket{svc=\"checkout\"}[5m])))"
        p99 = await prom.call_tool("execute_query", {"query": query})
        assert json.loads(p99.content[0].text)["result"][0]["value"][1] == "2.31"
        ranged = await prom.call_tool("execute_range_query", {
            "query": "process_resident_memory_bytes{job=\"cart\"}", "start": "2025-06-03T08:00:00Z", "end": "now",
            "step": "5m"})
        assert not ranged.is_error
        other = await prom.call_tool("execute_query", {"query": "up"})
        assert other.is_error
        assert other.content[0].text.startswith(GAP_MARKER) and '"query": "up"' in other.content[0].text
        assert (await prom.call_tool("get_targets", {})).content[0].text.startswith(GAP_MARKER)


def test_metrics_arguments_are_checked_against_the_real_schemas():
    with pytest.raises(ScenarioError) as err:
        parse_tools({
            "prometheus-server.execute_range_query": [{"args": {"promql": "up"}, "result": "{}"}],
            "kubernetes-server.pods_top": [{"args": {"all_namespaces": "sometimes"}, "result": "x"}],
            "monitoring.execute_query": [{"result": "{}"}],
            "monitoring.pods_list": [{"result": "x"}],
        })
    problems = "\n".join(err.value.problems)
    assert "unknown argument 'promql' of execute_range_query" in problems
    assert "argument 'all_namespaces'" in problems
    assert "monitoring: mixes the tools of kubernetes and prometheus servers" in problems


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


def test_an_abstention_may_list_no_findings_but_a_cause_must():
    abstain = Expect.model_validate({"expect": "abstain", "forbidden": [{"name": "x", "any": ["oomkilled"]}]})
    assert abstain.findings == []
    assert Expect.model_validate({"culprit": ["db"], "findings": [{"name": "x", "any": ["y"]}]}).expect == "cause"
    with pytest.raises(ValueError, match="at least one finding is needed"):
        Expect.model_validate({"culprit": ["db"], "findings": []})
    with pytest.raises(ValueError, match="culprit: name the component"):
        Expect.model_validate({"findings": [{"name": "x", "any": ["y"]}]})
    with pytest.raises(ValueError, match="expect"):
        Expect.model_validate({"expect": "maybe", "findings": [{"name": "x", "any": ["y"]}]})


ACTING = {
    "kubernetes-server.resources_get": [
        {"args": {"kind": "Deployment", "name": "api"}, "result": "readyReplicas: 3",
         "after_action": {"tool": "kubernetes-server.resources_scale", "args": {"name": "api", "scale": 3}}},
        {"args": {"kind": "Deployment", "name": "api"}, "result": "replicas: 0"},
    ],
    "kubernetes-server.resources_scale": [
        {"args": {"kind": "Deployment", "name": "api", "scale": 3}, "result": "deployment.apps/api scaled"},
    ],
}
GET_API = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api", "namespace": "shop"}


@pytest.mark.asyncio
async def test_a_write_mode_server_offers_the_action_tools_and_reads_change_once_an_action_ran(tmp_path):
    fixtures, state = parse_tools(ACTING), tmp_path / "state.jsonl"
    async with Client(build_server(fixtures, "kubernetes-server", state=state)) as read, \
            Client(build_server(fixtures, "kubernetes-server", write=True, state=state)) as write:
        assert "resources_scale" not in {t.name for t in (await read.list_tools()).tools}  # read-only: no action
        assert {"resources_scale", "pods_delete"} <= {t.name for t in (await write.list_tools()).tools}
        assert (await read.call_tool("resources_get", GET_API)).content[0].text == "replicas: 0"
        wrong = await write.call_tool("resources_scale", {**GET_API, "scale": 5})  # unrecorded: a gap, no change
        assert wrong.is_error and not state.exists()
        ran = await write.call_tool("resources_scale", {**GET_API, "scale": 3})
        assert ran.content[0].text == "deployment.apps/api scaled"
        for server in (read, write):  # both servers of the run see the new state
            assert (await server.call_tool("resources_get", GET_API)).content[0].text == "readyReplicas: 3"


def test_after_action_must_name_an_action_tool_of_the_same_server():
    with pytest.raises(ScenarioError) as err:
        parse_tools({"kubernetes-server.pods_list": [
            {"result": "x", "after_action": {"tool": "kubernetes-server.pods_get"}},
            {"result": "y", "after_action": {"tool": "other.resources_scale"}},
            {"result": "z", "after_action": {"tool": "kubernetes-server.resources_scale", "args": {"replicas": 2}}}]})
    problems = "\n".join(err.value.problems)
    assert "'kubernetes-server.pods_get' is not an action tool" in problems
    assert "'other.resources_scale' is not an action tool of kubernetes-server" in problems
    assert "unknown argument 'replicas' of resources_scale" in problems
