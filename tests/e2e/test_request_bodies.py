"""The production web server: a `Transfer-Encoding: chunked` body (no Content-Length) is read, within the same
limit as any body; past it, a 413 in the API's error shape."""

from __future__ import annotations

import httpx
import pytest

from tarsy.models import AlertSession
from tests.support.processes import start_server

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


def _chunks(*parts: bytes):
    yield from parts


def test_a_chunked_body_is_read_and_a_chunked_body_past_the_limit_is_a_413(tmp_path):
    server, base = start_server(tmp_path)
    try:
        headers = {"Content-Type": "application/json"}
        accepted = httpx.post(f"{base}/api/v1/alerts", headers=headers, timeout=30,
                              content=_chunks(b'{"data": "pod web-1', b' CrashLoopBackOff"}'))
        assert accepted.status_code == 202, accepted.text
        assert AlertSession.objects.get(id=accepted.json()["session_id"]).alert_data == "pod web-1 CrashLoopBackOff"
        for path in ("/api/v1/alerts", "/api/v1/alerts/pagerduty"):
            refused = httpx.post(f"{base}{path}", headers=headers, timeout=30,
                                 content=_chunks(*[b"x" * (1024 * 1024)] * 4))
            assert refused.status_code == 413, refused.text
            assert refused.json() == {"error": "payload_too_large",
                                      "detail": "The request body exceeds 3145728 bytes."}
        assert "Traceback" not in server.log()
    finally:
        server.stop()
