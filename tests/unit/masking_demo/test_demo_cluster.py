"""The demo Kubernetes MCP server: over real stdio, and in-process for the fast cases."""

from __future__ import annotations

import sys

import anyio
import yaml
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from agents.config.schema import MaskingConfig
from agents.mcp import demo_cluster_data as data
from agents.mcp.masking import SECRET_DATA_MASK, mask_tool_result

STDIO_TIMEOUT_S = 20  # spawn + initialize takes ~1 s here; a hung server must fail the test, not stall CI
EXPECTED_TOOLS = {
    "namespaces_list",
    "pods_list",
    "pods_list_in_namespace",
    "pods_get",
    "pods_log",
    "events_list",
    "resources_list",
    "resources_get",
}


def _text(result) -> str:
    return "".join(c.text for c in result.content)


async def test_stdio_server_lists_tools_and_answers_calls():
    params = StdioServerParameters(command=sys.executable, args=["-m", "agents.mcp.demo_cluster"])
    with anyio.fail_after(STDIO_TIMEOUT_S):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            pods = await session.call_tool("pods_list", {})
            log = await session.call_tool(
                "pods_log", {"namespace": "shop", "name": data.CRASHING_POD, "previous": True}
            )
            events = await session.call_tool("events_list", {"namespace": "shop"})
            missing = await session.call_tool("pods_get", {"namespace": "shop", "name": "web-0000000000-zzzzz"})

    assert set(tools) == EXPECTED_TOOLS
    assert tools["pods_log"].input_schema["properties"]["previous"]["type"] == "boolean"
    assert tools["pods_get"].input_schema["required"] == ["name"]
    assert not pods.is_error and data.CRASHING_POD in _text(pods) and "CrashLoopBackOff" in _text(pods)
    assert data.DB_FATAL_LINE in _text(log)
    assert "BackOff" in _text(events) and "Unhealthy" in _text(events)
    assert missing.is_error and 'pods "web-0000000000-zzzzz" not found' in _text(missing)


async def test_pod_table_shows_the_incident(open_cluster):
    async with open_cluster() as cluster:
        rows = {
            line.split()[3]: line.split() for line in _text(await cluster.call_tool("pods_list", {})).splitlines()[1:]
        }

        assert rows[data.CRASHING_POD][4:7] == ["0/1", "CrashLoopBackOff", str(data.CRASHING_RESTARTS)]
        assert rows[data.DB_POD][4:7] == ["0/1", "Running", str(data.DB_RESTARTS)]
        healthy = [name for name, row in rows.items() if row[5] == "Running" and row[4] == "1/1"]
        assert {"web-7d9c8b6f5-m8r2n", "web-7d9c8b6f5-p5w7z", "cart-5f6d8c9b7-qt9wz"} <= set(healthy)


async def test_label_selector_and_namespace_filter(open_cluster):
    async with open_cluster() as cluster:
        web = _text(await cluster.call_tool("pods_list", {"labelSelector": "app=web"}))
        system = _text(await cluster.call_tool("pods_list_in_namespace", {"namespace": "kube-system"}))

        assert web.count("web-7d9c8b6f5-") == 3 and "orders-db" not in web
        assert "coredns" in system and "shop" not in system


async def test_database_pod_was_oomkilled_at_its_limit(open_cluster):
    async with open_cluster() as cluster:
        pod = yaml.safe_load(_text(await cluster.call_tool("pods_get", {"namespace": "shop", "name": data.DB_POD})))

        status = pod["status"]["containerStatuses"][0]
        assert status["lastState"]["terminated"]["reason"] == "OOMKilled"
        assert status["lastState"]["terminated"]["exitCode"] == 137
        assert pod["spec"]["containers"][0]["resources"]["limits"]["memory"] == data.DB_MEMORY_LIMIT


async def test_previous_logs_need_a_terminated_container(open_cluster):
    async with open_cluster() as cluster:
        result = await cluster.call_tool(
            "pods_log", {"namespace": "shop", "name": "cart-5f6d8c9b7-qt9wz", "previous": True}
        )

        assert result.is_error and "previous terminated container" in _text(result)


async def test_unknown_namespace_is_a_tool_error(open_cluster):
    async with open_cluster() as cluster:
        result = await cluster.call_tool("pods_list_in_namespace", {"namespace": "nope"})

        assert result.is_error and 'namespaces "nope" not found' in _text(result)


async def test_secret_and_kubeconfig_configmap_are_masked_by_the_server_config(open_cluster):
    async with open_cluster() as cluster:
        cfg = MaskingConfig(pattern_groups=["kubernetes", "secrets"])
        secret = await cluster.call_tool(
            "resources_get", {"apiVersion": "v1", "kind": "Secret", "namespace": "shop", "name": data.SECRET_NAME}
        )
        config = await cluster.call_tool(
            "resources_get",
            {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": data.KUBECONFIG_CONFIGMAP},
        )

        raw_secret = _text(secret)
        masked_secret = yaml.safe_load(mask_tool_result(raw_secret, cfg))
        masked_config = mask_tool_result(_text(config), cfg)
        assert "c2hvcC1vcmRlcnMtZGItUzNjcjN0IQ==" in raw_secret
        assert masked_secret["data"] == {"password": SECRET_DATA_MASK, "username": SECRET_DATA_MASK}
        assert "certificate-authority-data: __MASKED_CA_CERTIFICATE__" in masked_config
        assert "token: __MASKED_TOKEN__" in masked_config and "kind: ConfigMap" in masked_config


async def test_resources_list_and_unknown_kind(open_cluster):
    async with open_cluster() as cluster:
        deployments = _text(
            await cluster.call_tool(
                "resources_list", {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop"}
            )
        )
        unknown = await cluster.call_tool("resources_list", {"apiVersion": "v1", "kind": "Widget"})

        assert "web" in deployments and "2/3" in deployments and "coredns" not in deployments
        assert unknown.is_error and 'resource type "Widget"' in _text(unknown)


async def test_each_incident_shows_in_the_pod_table(open_cluster):
    async with open_cluster() as cluster:
        rows = {
            line.split()[3]: line.split() for line in _text(await cluster.call_tool("pods_list", {})).splitlines()[1:]
        }

    assert rows[data.MISSING_SECRET_POD][4:6] == ["0/1", "CreateContainerConfigError"]
    assert rows[data.BAD_TAG_POD][4:6] == ["0/1", "ImagePullBackOff"]
    assert rows[data.THROTTLED_POD][4:7] == ["1/1", "Running", "5"]
    assert rows[data.EVICTED_POD][4:6] == ["0/1", "Evicted"] and rows[data.EVICTED_POD][-2] == data.PRESSURED_NODE
    assert rows[data.NOT_READY_POD][4:7] == ["0/1", "Running", "0"]
    assert len({row[0] for row in rows.values() if row[5] != "Running" or row[4] != "1/1" or row[6] != "0"}) >= 6


async def test_the_objects_behind_the_incidents(open_cluster):
    async with open_cluster() as cluster:
        node = yaml.safe_load(_text(await cluster.call_tool(
            "resources_get", {"apiVersion": "v1", "kind": "Node", "name": data.PRESSURED_NODE})))
        secret = await cluster.call_tool("resources_get", {"apiVersion": "v1", "kind": "Secret",
                                                           "namespace": "billing", "name": data.MISSING_SECRET})
        service = await cluster.call_tool(
            "resources_get", {"apiVersion": "v1", "kind": "Service", "namespace": "inventory", "name": "stock-cache"})
        deployment = yaml.safe_load(_text(await cluster.call_tool(
            "resources_get", {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "analytics",
                              "name": "report-api"})))
        pull = _text(await cluster.call_tool("events_list", {"namespace": "analytics"}))
        throttled = _text(await cluster.call_tool(
            "pods_log", {"namespace": "search", "name": data.THROTTLED_POD, "previous": True}))
        waiting = await cluster.call_tool("pods_log", {"namespace": "billing", "name": data.MISSING_SECRET_POD})
        evicted = await cluster.call_tool("pods_log", {"namespace": "logging", "name": data.EVICTED_POD})

    conditions = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert conditions["DiskPressure"] == "True" and node["spec"]["taints"][0]["key"].endswith("disk-pressure")
    assert secret.is_error and f'secrets "{data.MISSING_SECRET}" not found' in _text(secret)
    assert service.is_error and 'services "stock-cache" not found' in _text(service)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == data.BAD_IMAGE
    assert f"{data.BAD_IMAGE}: not found" in pull and "cpu throttled" in throttled
    assert waiting.is_error and "is waiting to start: CreateContainerConfigError" in _text(waiting)
    assert evicted.is_error and "the pod was evicted" in _text(evicted)
