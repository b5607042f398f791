"""End to end: the production web server (uvicorn) + a real worker + `websockets` clients on Redis and PostgreSQL.

An alert goes in over HTTP; subscribers of `session:<id>` see the investigation stream live, in order;
a client that drops out catches up with exactly what it missed; one too far behind is told to reload.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tarsy.services.events import publish
from tarsy.streaming.consumer import CATCHUP_LIMIT
from tests.support.processes import start_server, wait_for

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(120)]

ANSWER = ("Thought: The pod cannot mount its config map.\n"
          "Final Answer: web-1 crashes because config map web-cfg is gone.")
SCRIPT = {
    "KubernetesAgent": [{"thinking": "The alert names web-1; check why it restarts.", "text": ANSWER}],
    "executive_summary": [{"text": "web-1 crash-loops: its config map is missing."}],
}


def recv(ws, timeout: float = 30.0) -> dict:
    return json.loads(ws.recv(timeout=timeout))


def subscribe(ws, channel: str, **extra) -> None:
    assert recv(ws)["type"] == "connection.established"
    ws.send(json.dumps({"action": "subscribe", "channel": channel, **extra}))
    assert recv(ws) == {"type": "subscription.confirmed", "channel": channel}


def collect_until(ws, predicate, timeout: float) -> list[dict]:
    deadline, got = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        got.append(recv(ws, timeout=max(0.1, deadline - time.monotonic())))
        if predicate(got[-1]):
            return got
    raise AssertionError(f"stream ended without the expected event: {[e['type'] for e in got]}")


def drain(ws, quiet: float = 1.5) -> list[dict]:
    got = []
    while True:
        try:
            got.append(recv(ws, timeout=quiet))
        except TimeoutError:
            return got


def first(events: list[dict], start: int, match) -> int:
    for index in range(start, len(events)):
        if match(events[index]):
            return index
    raise AssertionError(f"no matching event after #{start}: {[e['type'] for e in events[start:]]}")


def test_investigation_streams_live_in_order_and_reconnects_catch_up(scripted_config, worker, config_dir, tmp_path):
    scripted_config(SCRIPT, latency_ms=1500, chunk_size=4)
    prom = tmp_path / "prom"
    prom.mkdir()
    server, base = start_server(tmp_path, config_dir, ALLOWED_HOSTS="127.0.0.1,localhost",
                                PROMETHEUS_MULTIPROC_DIR=str(prom))
    ws_url = base.replace("http", "ws") + "/ws"
    try:
        response = httpx.post(f"{base}/api/v1/alerts", json={"data": "pod web-1 CrashLoopBackOff"}, timeout=10)
        assert response.status_code == 202, response.text
        session_id = response.json()["session_id"]
        channel = f"session:{session_id}"
        with connect(ws_url) as live, connect(ws_url) as dropper:
            subscribe(live, channel)
            subscribe(dropper, channel)
            proc = worker(PROMETHEUS_MULTIPROC_DIR=str(prom))  # starts only now: nothing can be missed
            seen_by_dropper = collect_until(dropper, lambda e: e["type"] == "timeline_event.completed", 60)
            dropper.close()
            try:
                # The session's last event: it enters triage (needs_review) in the commit that completes it.
                events = collect_until(live, lambda e: e["type"] == "triage.updated", 60)
            except (AssertionError, TimeoutError):
                raise AssertionError(f"worker log:\n{proc.log()}\nserver log:\n{server.log()}") from None

        # In order: in_progress → streaming event → its chunks → its completion → final analysis → completed.
        running = first(events, 0, lambda e: e["type"] == "session.status" and e["status"] == "in_progress")
        created = first(events, running, lambda e: e["type"] == "timeline_event.created"
                        and e["timeline_event"]["status"] == "streaming")
        streamed_id = events[created]["timeline_event"]["id"]
        chunks = [i for i, e in enumerate(events)
                  if e["type"] == "stream.chunk" and e["timeline_event_id"] == streamed_id]
        completed = first(events, created, lambda e: e["type"] == "timeline_event.completed"
                          and e["timeline_event"]["id"] == streamed_id)
        assert len(chunks) >= 2 and created < chunks[0] and chunks[-1] < completed
        assert "".join(events[i]["delta"] for i in chunks) == events[completed]["timeline_event"]["content"]
        final = first(events, completed, lambda e: e["type"] == "timeline_event.created"
                      and e["timeline_event"]["event_type"] == "final_analysis")
        assert "config map web-cfg is gone" in events[final]["timeline_event"]["content"]
        done = first(events, final, lambda e: e["type"] == "session.completed")
        assert events[done]["status"] == "completed"
        assert events[done]["executive_summary"] == "web-1 crash-loops: its config map is missing."
        assert all("event_id" in e for e in events if e["type"] != "stream.chunk")

        # The client that dropped out reconnects and gets exactly the persistent events it missed.
        cursor = max(e["event_id"] for e in seen_by_dropper if "event_id" in e)
        missed = [(e["event_id"], e["type"]) for e in events if e.get("event_id", 0) > cursor]
        assert missed
        with connect(ws_url) as again:
            subscribe(again, channel, last_event_id=cursor)
            assert [(e["event_id"], e["type"]) for e in drain(again)] == missed

        # A client more than CATCHUP_LIMIT events behind is told to reload over REST.
        for n in range(CATCHUP_LIMIT):
            publish("timeline_event.created", {"filler": n}, session_id=session_id)
        with connect(ws_url) as behind:
            subscribe(behind, channel, last_event_id=cursor)
            overflow = recv(behind)
            assert (overflow["type"], overflow["channel"], overflow["last_event_id"]) == (
                "catchup.overflow", channel, cursor)

        # REST agrees with the stream; health sees the worker; metrics include the worker's LLM calls.
        detail = httpx.get(f"{base}/api/v1/sessions/{session_id}", timeout=10).json()
        assert detail["status"] == "completed" and detail["last_event_id"] >= events[done]["event_id"]
        assert httpx.get(f"{base}/health", timeout=10).status_code == 200
        metrics = wait_for(lambda: (t := httpx.get(f"{base}/metrics", timeout=10).text)
                           and 'tarsy_llm_calls_total{model=' in t and t, timeout=10, message="worker metrics")
        assert 'tarsy_sessions_terminal_total{status="completed"} 1.0' in metrics
        assert 'tarsy_sessions_submitted_total{alert_type="kubernetes"} 1.0' in metrics
    finally:
        server.stop()


def test_websocket_from_a_disallowed_origin_is_refused(config_dir, tmp_path, scripted_config):
    scripted_config(SCRIPT)
    server, base = start_server(tmp_path, config_dir, ALLOWED_HOSTS="127.0.0.1,localhost")
    ws_url = base.replace("http", "ws") + "/ws"
    try:
        with pytest.raises(InvalidStatus) as refused:
            connect(ws_url, origin="https://evil.example", open_timeout=10)
        assert refused.value.response.status_code == 403
        with connect(ws_url, origin=base, open_timeout=10) as ws:
            assert recv(ws)["type"] == "connection.established"
    finally:
        server.stop()
