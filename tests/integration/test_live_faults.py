"""Live delivery through a Redis restart, in the production topology: web (uvicorn), two prefork workers, beat,
PostgreSQL and a Redis of the test's own, killed for 5 s mid-run. A WebSocket client that stays connected
throughout receives every stored event of the sessions it watches, in order and once, with no reload or
reconnect of its own, and every session completes within 60 s of Redis's return."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tarsy.models import TERMINAL_SESSION_STATUSES, AlertSession, Event
from tests.support.processes import free_port, start_redis, start_server, wait_for

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

STEP = {"text": "Thought: gathering evidence.\nAction: none.none\nAction Input: {}", "latency_ms": 1500}
SCRIPT = {"KubernetesAgent": [STEP, STEP, STEP, {"text": "Thought: enough.\nFinal Answer: the pod lacks memory.",
                                                 "latency_ms": 1500}],
          "executive_summary": [{"text": "The pod lacks memory.", "latency_ms": 1500}]}
WATCHED = 3


class Watcher(threading.Thread):
    """One WebSocket connection subscribed to some session channels from their start; it never reconnects."""

    def __init__(self, url: str, channels: list[str]):
        super().__init__(daemon=True)
        self.url, self.channels = url, channels
        self.events: dict[str, list[dict]] = {channel: [] for channel in channels}
        self.closed: str | None = None  # why the connection ended, if it did
        self.ready = threading.Event()
        self._halt = threading.Event()

    def run(self) -> None:
        with connect(self.url, open_timeout=10) as ws:
            for channel in self.channels:
                ws.send(json.dumps({"action": "subscribe", "channel": channel, "last_event_id": 0}))
            self.ready.set()
            while not self._halt.is_set():
                try:
                    message = json.loads(ws.recv(timeout=0.5))
                except TimeoutError:
                    continue
                except ConnectionClosed as exc:
                    self.closed = repr(exc)
                    return
                if message.get("channel") in self.events and "event_id" in message:
                    self.events[message["channel"]].append(message)

    def stop(self) -> None:
        self._halt.set()
        self.join(10)


def stored(channel: str) -> list[int]:
    return list(Event.objects.filter(channel=channel).order_by("seq").values_list("id", flat=True))


@pytest.mark.timeout(300)
def test_a_websocket_client_gets_every_stored_event_through_a_redis_restart(tmp_path, scripted_config, config_dir,
                                                                            worker, beat):
    scripted_config(SCRIPT, chunk_size=20)  # default settings: the outbox, not the sweeper, brings the work back
    port = free_port()
    redis_procs = [start_redis(tmp_path, port)]
    env = {"REDIS_URL": f"redis://127.0.0.1:{port}/0", "TARSY_HARD_LIMIT_GRACE": "1"}
    server, base = start_server(tmp_path, config_dir, ALLOWED_HOSTS="127.0.0.1,localhost", **env)
    procs = [server, worker(concurrency=2, **env), worker(concurrency=2, **env),
             beat(interval=1.0, **env)]
    watcher = None
    try:
        ids = [httpx.post(f"{base}/api/v1/alerts", json={"data": f"alert {i}"}, timeout=10).json()["session_id"]
               for i in range(WATCHED)]
        channels = [f"session:{session_id}" for session_id in ids]
        watcher = Watcher(base.replace("http", "ws") + "/ws", channels)
        watcher.start()
        assert watcher.ready.wait(10)
        wait_for(lambda: AlertSession.objects.filter(id__in=ids, status="in_progress").count() == WATCHED,
                 timeout=60, message="the sessions in progress")
        time.sleep(2)  # mid-run: iterations under way

        redis_procs[-1].kill()
        redis_procs[-1].stop()
        time.sleep(5)
        redis_procs.append(start_redis(tmp_path, port))

        def finished() -> bool:
            for n in (1, 2):  # the broker loss does not end a worker
                assert procs[n].popen.poll() is None, procs[n].log()[-4000:]
            return not AlertSession.objects.filter(id__in=ids).exclude(status__in=TERMINAL_SESSION_STATUSES).exists()

        # Default settings (orphan_threshold 300 s): the outbox, not the sweeper, brings the work back.
        wait_for(finished, timeout=60, interval=0.5, message="sessions to finish within 60 s of Redis's return")
        statuses = list(AlertSession.objects.filter(id__in=ids).values_list("status", flat=True))
        assert statuses == ["completed"] * WATCHED

        def all_received() -> bool:
            return all(set(stored(c)) <= {e["event_id"] for e in watcher.events[c]} for c in channels)

        try:
            wait_for(all_received, timeout=30, interval=0.5, message="every stored event on the socket")
        except AssertionError:
            pass  # the comparison below says what is missing
        for channel in channels:
            got = [e["event_id"] for e in watcher.events[channel]]
            want = stored(channel)
            assert sorted(set(want) - set(got)) == [], f"{channel}: stored events never received"
            assert got == want, f"{channel}: received out of order or twice"
            assert [e["seq"] for e in watcher.events[channel]] == list(range(1, len(want) + 1))
        assert any(e["type"] == "session.completed" for c in channels for e in watcher.events[c])
        assert watcher.closed is None, watcher.closed  # the same connection throughout
    finally:
        if watcher is not None:
            watcher.stop()
        server.stop()
        for proc in redis_procs:
            proc.stop()
