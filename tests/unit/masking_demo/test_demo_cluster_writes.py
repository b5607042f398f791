"""The demo cluster's write tools change what its reads show, as the cluster would; the read-only server has none."""

from __future__ import annotations

import pytest
import yaml
from mcp import Client

from agents.mcp import demo_cluster_data as data
from agents.mcp import demo_cluster_writes as writes
from agents.mcp.demo_cluster import build_server

pytestmark = pytest.mark.usefixtures("demo_cluster_changes")


async def _call(client, tool: str, **arguments) -> tuple[str, bool]:
    result = await client.call_tool(tool, arguments)
    return "".join(c.text for c in result.content), bool(result.is_error)


async def test_the_read_only_server_offers_no_write_tool():
    async with Client(build_server()) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert names and not names & set(writes.WRITE_TOOLS)


async def test_raising_the_database_memory_limit_heals_it_and_the_web_pod_that_waited_for_it():
    async with Client(build_server(actions=True)) as client:
        before, _ = await _call(client, "pods_get", namespace="shop", name=data.DB_POD)
        said, failed = await _call(client, "resources_set_limits", kind="StatefulSet", name="orders-db",
                                   namespace="shop", memory="512Mi")
        after, _ = await _call(client, "pods_get", namespace="shop", name=data.DB_POD)
        statefulset, _ = await _call(client, "resources_get", apiVersion="apps/v1", kind="StatefulSet",
                                     name="orders-db", namespace="shop")
        pods, _ = await _call(client, "pods_list_in_namespace", namespace="shop")

    assert not failed and "limits set to memory 512Mi" in said
    assert "OOMKilled" in before and "OOMKilled" not in after
    status = yaml.safe_load(after)["status"]["containerStatuses"][0]
    assert status["ready"] is True and status["restartCount"] == 0
    assert "readyReplicas: 1" in statefulset and "memory: 512Mi" in statefulset
    assert "CrashLoopBackOff" not in pods  # the web pod started once its database was ready


async def test_a_limit_that_is_not_raised_heals_nothing_and_a_restart_does_not_cure_a_missing_secret():
    async with Client(build_server(actions=True)) as client:
        await _call(client, "resources_set_limits", kind="StatefulSet", name="orders-db", namespace="shop",
                    memory="128Mi")
        db, _ = await _call(client, "pods_get", namespace="shop", name=data.DB_POD)
        await _call(client, "rollout_restart", kind="Deployment", name="invoice-worker", namespace="billing")
        invoice, _ = await _call(client, "pods_list_in_namespace", namespace="billing")

    assert "OOMKilled" in db
    assert "CreateContainerConfigError" in invoice


async def test_rollout_undo_returns_to_the_previous_image_and_bad_input_is_refused():
    async with Client(build_server(actions=True)) as client:
        said, failed = await _call(client, "rollout_undo", name="report-api", namespace="analytics")
        deployment, _ = await _call(client, "resources_get", apiVersion="apps/v1", kind="Deployment",
                                    name="report-api", namespace="analytics")
        pods, _ = await _call(client, "pods_list_in_namespace", namespace="analytics")
        again, again_failed = await _call(client, "rollout_undo", name="report-api", namespace="analytics")
        bad, bad_failed = await _call(client, "resources_set_limits", kind="StatefulSet", name="orders-db",
                                      namespace="shop", memory="lots")
        missing, missing_failed = await _call(client, "resources_scale", kind="Deployment", name="nope",
                                              namespace="shop", replicas=2)

    assert not failed and "report-api:2.8.4" in said
    assert "image: registry.example.com/analytics/report-api:2.8.4" in deployment
    assert data.BAD_TAG_POD not in pods and "ImagePullBackOff" not in pods
    assert again_failed and "no previous revision" in again
    assert bad_failed and "not a memory quantity" in bad
    assert missing_failed and "not found" in missing


async def test_a_change_is_seen_by_the_read_only_server_in_another_process(tmp_path):
    """The investigators' server and the action agents' are two processes: the journal file joins them."""
    import os
    import sys

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with Client(build_server(actions=True)) as client:
        await _call(client, "resources_scale", kind="Deployment", name="web", namespace="shop", replicas=2)
    server = StdioServerParameters(command=sys.executable, args=["-m", "agents.mcp.demo_cluster"],
                                   env={**os.environ, writes.STATE_ENV: os.environ[writes.STATE_ENV]})
    async with stdio_client(server) as (read, write), ClientSession(read, write) as reader:
        await reader.initialize()
        pods, _ = await _call(reader, "pods_list_in_namespace", namespace="shop")
    assert data.CRASHING_POD not in pods and pods.count("web-7d9c8b6f5-") == 2
