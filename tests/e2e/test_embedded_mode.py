"""`make run`'s mode for real: one `manage.py serve` process on SQLite with the in-process worker, the demo
LLM and the demo cluster — alerts in over HTTP, finished investigations out."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

def _submit(base: str, data, alert_type: str = "kubernetes") -> str:
    response = httpx.post(f"{base}/api/v1/alerts", json={"alert_type": alert_type, "data": data}, timeout=30)
    assert response.status_code == 202, response.text
    return response.json()["session_id"]


# Alerts naming different resources of the demo cluster, and one naming a pod it does not have; for each, what its
# root cause line must say: the named resource and its own cause.
ALERTS = [
    ({"alertname": "KubePodNotReady", "namespace": "inventory", "pod": "inventory-api-5c7d9f6b8-n3k7w"},
     ("inventory-api-5c7d9f6b8-n3k7w", "stock-cache", "no such host")),
    ("deployment report-api in namespace analytics has unavailable replicas",
     ("report-api-7f4b9c6d8-w2x5v", "ImagePullBackOff", "report-api:2.9.0")),
    ("orders-db unhealthy", ("orders-db-0", "OOMKilled", "256Mi")),
    ("pod web-1 CrashLoopBackOff", ("web-7d9c8b6f5-x2k4q", "CrashLoopBackOff", "orders-db-0", "OOMKilled")),
]


def test_embedded_default_investigates_concurrent_alerts_with_the_demo_cluster(embedded_server):
    base, proc = embedded_server
    assert "Admin login: admin / " in proc.log()
    with ThreadPoolExecutor(len(ALERTS)) as pool:
        ids = list(pool.map(lambda alert: _submit(base, alert[0]), ALERTS))

    def finished():
        bodies = [httpx.get(f"{base}/api/v1/sessions/{i}", timeout=10).json() for i in ids]
        return bodies if all(b["status"] in ("completed", "failed", "timed_out", "cancelled") for b in bodies) \
            else None

    try:
        bodies = wait_for(finished, timeout=150, interval=0.5, message="demo investigations")
    except AssertionError:
        raise AssertionError(proc.log()[-5000:]) from None
    causes = []
    for body, (_, facts) in zip(bodies, ALERTS, strict=True):
        assert body["status"] == "completed", (body["error_message"], proc.log()[-3000:])
        analysis = body["final_analysis"]
        cause = next(line for line in analysis.splitlines() if line.startswith("**Root cause:**"))
        assert all(fact in cause for fact in facts), (facts, cause)
        assert "demo" in analysis.lower()
        assert body["executive_summary"]
        assert body["stages"][0]["executions"][0]["llm_provider"] == "demo"
        causes.append(cause)
    assert len(set(causes)) == len(ALERTS)
    assert "the demo cluster has no pod `web-1`" in bodies[-1]["final_analysis"]
    assert all("the demo cluster has no" not in body["final_analysis"] for body in bodies[:-1])
    assert "database is locked" not in proc.log()


def test_embedded_default_triages_with_an_orchestrator_and_its_sub_agents(embedded_server):
    base, proc = embedded_server
    alert_types = httpx.get(f"{base}/api/v1/alert-types", timeout=10).json()["alert_types"]
    assert "triage" in str(alert_types)  # offered on the submit page
    session_id = _submit(base, {"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": "orders-db-0"},
                         alert_type="triage")

    def finished():
        body = httpx.get(f"{base}/api/v1/sessions/{session_id}", timeout=10).json()
        return body if body["status"] in ("completed", "failed", "timed_out", "cancelled") else None

    try:
        body = wait_for(finished, timeout=120, interval=0.5, message="the triage")
    except AssertionError:
        raise AssertionError(proc.log()[-5000:]) from None
    assert body["status"] == "completed", (body["error_message"], proc.log()[-3000:])
    executions = {e["agent_name"]: e for e in body["stages"][0]["executions"]}
    parent = executions["TriageAgent"]["id"]
    for name in ("KubernetesAgent", "PrometheusAgent"):
        assert executions[name]["status"] == "completed" and executions[name]["parent_execution_id"] == parent
    cause = next(line for line in body["final_analysis"].splitlines() if line.startswith("**Root cause:**"))
    assert "orders-db-0" in cause and "OOMKilled" in cause, cause
    assert "runs out of memory" in body["final_analysis"]  # the metrics agent's finding
    assert body["citations"]["invalid"] == []


def test_embedded_server_streams_events_over_websocket(embedded_server):
    import asyncio
    import json

    import websockets

    base, proc = embedded_server

    async def watch() -> list[str]:
        async with websockets.connect(base.replace("http", "ws") + "/ws") as ws:
            assert json.loads(await ws.recv())["type"] == "connection.established"
            await ws.send(json.dumps({"action": "subscribe", "channel": "sessions"}))
            assert json.loads(await ws.recv())["type"] == "subscription.confirmed"
            session_id = await asyncio.to_thread(_submit, base, "pod web-1 CrashLoopBackOff")
            seen = []
            while True:
                event = json.loads(await asyncio.wait_for(ws.recv(), 60))
                if event.get("session_id") == session_id:
                    seen.append(event.get("status"))
                    if event["type"] == "session.completed":
                        return seen

    statuses = asyncio.run(watch())
    assert statuses[0] in ("pending", "in_progress") and statuses[-1] == "completed", statuses
