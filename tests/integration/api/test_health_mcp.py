"""/health: cheap for a load balancer (one worker probe per window), public without details (no error text, host
or worker names), and failing MCP servers reported without blocking the probe; the details stay on the
authenticated system page."""

from __future__ import annotations

import base64
import json
import sys
import threading
from urllib.parse import urlsplit

import pytest
import redis
from django.conf import settings
from django.db import connection
from django.test import Client

from agents.mcp import health as mcp_health
from agents.mcp.health import check_servers
from tarsy.config import get_config
from tarsy.web import health as web_health
from tests.support.configdir import write_config
from tests.support.processes import wait_for

pytestmark = pytest.mark.timeout(60)

BROKEN_MCP = {"broken": {"transport": {"type": "stdio", "command": "/nonexistent/mcp-host.invalid/server"}},
              # the built-in server needs a cluster; a port nothing listens on fails at once instead
              "kubernetes-server": {"transport": {"type": "http", "url": "http://127.0.0.1:9/mcp", "timeout": "2s"}}}
BROKEN_CONFIG = {"mcp_servers": BROKEN_MCP, "agents": {"KubernetesAgent": {"mcp_servers": list(BROKEN_MCP)}}}


@pytest.fixture(autouse=True)
def _fresh_caches():
    mcp_health.clear_cache()
    web_health._probe.clear()
    yield
    mcp_health.clear_cache()
    web_health._probe.clear()


class BroadcastCounter:
    """Counts Celery control broadcasts (the worker probe) as they cross the broker: Redis pub/sub on our db's
    pidbox channel."""

    def __init__(self):
        db = int(urlsplit(settings.REDIS_URL).path.lstrip("/") or 0)
        self._pubsub = redis.Redis.from_url(settings.REDIS_URL).pubsub(ignore_subscribe_messages=True)
        self._pubsub.psubscribe(f"*/{db}.celery.pidbox")
        self._pubsub.get_message(timeout=1.0)  # the subscription is in place before anything is counted

    def count(self, settle_s: float = 0.5) -> int:
        seen = 0
        while (message := self._pubsub.get_message(timeout=settle_s)) is not None:
            envelope = json.loads(message["data"])
            command = json.loads(base64.b64decode(envelope["body"]))  # kombu's envelope: a base64 JSON body
            seen += command["method"] == "active_queues"  # the worker probe; other broadcasts are not ours
        return seen

    def close(self):
        self._pubsub.close()


@pytest.fixture
def broadcasts():
    counter = BroadcastCounter()
    yield counter
    counter.close()


@pytest.mark.services
@pytest.mark.django_db
def test_calls_within_the_window_share_one_worker_probe(broadcasts):
    client = Client()
    first, second = client.get("/health"), client.get("/health")
    assert first.json()["checks"]["workers"] == second.json()["checks"]["workers"] == "degraded"  # no worker runs
    assert broadcasts.count() == 1

    web_health._probe.clear()  # a new window
    answers = []
    callers = [threading.Thread(target=lambda: answers.append(Client().get("/health").status_code))
               for _ in range(6)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert answers == [503] * 6
    assert broadcasts.count() == 1  # concurrent callers waited for the one probe in flight


@pytest.mark.services
@pytest.mark.django_db
def test_the_warnings_banner_shares_the_health_probe_and_its_window(broadcasts):
    """The banner probes last (after its MCP checks, which may take seconds): /health right after it shares
    that probe."""
    client = Client()
    warnings = client.get("/api/v1/system/warnings").json()["warnings"]
    assert {"category": "runtime", "message": "No live worker: alerts are queued but not investigated"} in warnings
    assert client.get("/health").json()["checks"]["workers"] == "degraded"
    assert broadcasts.count() == 1  # one probe for both

    web_health._probe.clear()  # a new window: the banner probes again rather than keep an answer of its own
    client.get("/api/v1/system/warnings")
    assert broadcasts.count() == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_public_body_names_components_only_even_when_checks_fail_with_host_names(tmp_path, settings):
    config = write_config(tmp_path, tarsy=BROKEN_CONFIG)
    check_servers(config, names=["broken"])  # the failure /health reports comes from the last background check
    settings.REDIS_URL = "redis://broker-host.invalid:6379/0"
    connection.close()
    real_host = connection.settings_dict["HOST"]
    connection.settings_dict["HOST"] = "db-host.invalid"
    try:
        response = Client().get("/health")
    finally:
        connection.settings_dict["HOST"] = real_host
        connection.close()
    assert response.status_code == 503
    assert response.json() == {"status": "unhealthy", "checks": {
        "database": "degraded", "broker": "degraded", "workers": "degraded", "config": "ok", "mcp": "degraded"}}
    text = response.content.decode()
    for leak in ("invalid", "nonexistent", "Error", "queue", "tarsy-test"):
        assert leak not in text


@pytest.mark.services
@pytest.mark.django_db
def test_details_are_on_the_system_page(settings):
    settings.REDIS_URL = "redis://broker-host.invalid:6379/0"
    page = Client().get("/system").content.decode()
    assert "broker-host.invalid" in page and "the broker is unreachable" in page
    assert Client(REMOTE_ADDR="10.1.2.3").get("/system").status_code == 403  # not public (auth mode none)


@pytest.mark.django_db
def test_a_server_that_cannot_start_degrades_health_without_blocking_it(tmp_path):
    write_config(tmp_path, tarsy=BROKEN_CONFIG)
    client = Client()

    def degraded():
        body = client.get("/health").json()
        return body if body["checks"]["mcp"] == "degraded" else None

    body = wait_for(degraded, timeout=20, interval=0.3, message="the MCP failure in /health")
    assert "broken" not in json.dumps(body)
    servers = {s["name"]: s for s in Client().get("/api/v1/system/mcp-servers").json()["servers"]}
    assert "mcp-host.invalid" in servers["broken"]["error"]  # the detail, behind the API's auth


SLOW_TO_FAIL = {"slow": {"transport": {"type": "stdio", "command": sys.executable,
                                       "args": ["-c", "import time; time.sleep(3)"]}}}


@pytest.mark.django_db
def test_a_server_not_checked_yet_is_not_called_ok_and_one_that_then_fails_stays_degraded(tmp_path):
    """Before the first check answers, nothing is known of a server that has not started: /health must not say
    "ok" for it, and once the server fails it says "degraded"."""
    write_config(tmp_path, tarsy={"mcp_servers": SLOW_TO_FAIL,
                                  "agents": {"KubernetesAgent": {"mcp_servers": ["slow"]}}})
    client = Client()

    first = client.get("/health").json()
    assert first["checks"]["mcp"] == "degraded"
    assert first["status"] != "ok"

    def checked():
        body = client.get("/health").json()
        return body if mcp_health.not_yet_checked(get_config()) == [] else None

    body = wait_for(checked, timeout=30, interval=0.3, message="the first MCP check")
    assert body["checks"]["mcp"] == "degraded"  # the server exits without answering: it failed


@pytest.mark.django_db
def test_health_says_ok_overall_when_every_component_is_ok(tmp_path, settings):
    """One word for "all is well", the same as each component's and the documentation's: "ok"."""
    if not settings.EMBEDDED:
        pytest.skip("every component ok needs a worker: the embedded default runs one in process")
    write_config(tmp_path)  # the built-ins: the demo servers, in process
    client = Client()
    client.get("/health")
    wait_for(lambda: mcp_health.not_yet_checked(get_config()) == [], timeout=30, interval=0.2,
             message="the first MCP check")
    body = client.get("/health").json()
    assert set(body["checks"].values()) == {"ok"}, body
    assert body["status"] == "ok"
