"""The production web server: the client address auth checks is the connection's peer, never a header."""

from __future__ import annotations

import httpx
import pytest

from tests.support.configdir import write_config
from tests.support.processes import start_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

ALERT = {"data": "pod web-1 CrashLoopBackOff"}


def test_a_claimed_forwarded_address_does_not_make_a_trusted_proxy(config_dir, tmp_path):
    # Proxy mode trusts identity headers from 10.0.0.0/8 only; this client connects from 127.0.0.1.
    write_config(config_dir, tarsy={"system": {"auth": {"mode": "proxy"}, "trusted_proxies": ["10.0.0.0/8"]}})
    server, base = start_server(tmp_path, config_dir)
    try:
        spoofed = httpx.post(f"{base}/api/v1/alerts", json=ALERT, timeout=10,
                             headers={"X-Forwarded-For": "10.1.2.3", "X-Forwarded-User": "mallory"})
        assert spoofed.status_code == 403, spoofed.text
        assert spoofed.json()["error"] == "forbidden"
    finally:
        server.stop()
