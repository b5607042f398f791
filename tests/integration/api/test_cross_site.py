"""State-changing API requests are safe against cross-site forms in every auth mode, while the dashboard's own
fetch() calls and JSON API clients keep working."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.test import APIClient

from tarsy.models import AlertSession
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]

EVIL = {"HTTP_ORIGIN": "https://evil.example", "HTTP_SEC_FETCH_SITE": "cross-site"}
SAME_ORIGIN = {"HTTP_ORIGIN": "http://testserver", "HTTP_SEC_FETCH_SITE": "same-origin"}


def browser(tmp_path, mode: str) -> APIClient:
    """A browser holding the ambient credential of `mode`: a loopback address, the auth proxy's identity (the
    proxy forwards whatever the browser sends, cookie-authenticated) or a Django session cookie."""
    write_config(tmp_path / "cfg", tarsy={"system": {"auth": {"mode": mode}, "trusted_proxies": ["10.0.0.5"]}})
    if mode == "none":
        return APIClient(REMOTE_ADDR="127.0.0.1", enforce_csrf_checks=True)
    if mode == "proxy":
        return APIClient(REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_USER="alice", enforce_csrf_checks=True)
    client = APIClient(REMOTE_ADDR="10.0.0.9", enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.create_user("dana", password="pw-123456"))
    return client


def csrf_token(client: APIClient) -> str:
    assert client.get("/submit").status_code == 200  # a dashboard page: its template carries the CSRF token
    return client.cookies["csrftoken"].value


MODES = ["none", "proxy", "token"]


@pytest.mark.parametrize("mode", MODES)
def test_a_cross_site_form_cannot_cancel_or_submit(tmp_path, make_session, mode):
    client = browser(tmp_path, mode)
    pending = make_session(status="pending")
    for content_type, body in [("application/x-www-form-urlencoded", "x=1"), ("text/plain", "x"),
                               ("multipart/form-data; boundary=b", "--b--")]:
        cancel = client.generic("POST", f"/api/v1/sessions/{pending.id}/cancel", body, content_type, **EVIL)
        assert cancel.status_code == 403, cancel.content
        assert "cross-site request refused" in cancel.json()["detail"]
        submit = client.generic("POST", "/api/v1/alerts", '{"data": "x"}', content_type, **EVIL)
        assert submit.status_code == 403
    # A cross-site fetch() without a body (no Content-Type at all) is refused on its Origin.
    assert client.generic("POST", f"/api/v1/sessions/{pending.id}/cancel", "", None, **EVIL).status_code == 403
    # Origin "null" (sandboxed frames, some redirects) is not ours either.
    assert client.post(f"/api/v1/sessions/{pending.id}/cancel", HTTP_ORIGIN="null").status_code == 403
    chat = client.generic("POST", f"/api/v1/sessions/{pending.id}/chat/messages", "content=hi",
                          "application/x-www-form-urlencoded", **EVIL)
    assert chat.status_code == 403
    assert client.generic("DELETE", f"/api/v1/sessions/{pending.id}", **EVIL).status_code == 403
    assert AlertSession.objects.get(id=pending.id).status == "pending"
    assert AlertSession.objects.count() == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_form_body_without_origin_headers_is_refused(tmp_path, make_session, mode):
    """Browsers too old to send Origin/Sec-Fetch-Site can still only post forms and text: 415."""
    client = browser(tmp_path, mode)
    pending = make_session(status="pending")
    cancel = client.generic("POST", f"/api/v1/sessions/{pending.id}/cancel", "", "application/x-www-form-urlencoded")
    assert cancel.status_code == 415 and cancel.json()["error"] == "unsupported_media_type"
    assert client.generic("POST", "/api/v1/alerts", '{"data": "x"}', "text/plain").status_code == 415
    assert AlertSession.objects.get(id=pending.id).status == "pending"


@pytest.mark.parametrize("mode", MODES)
def test_the_dashboards_own_fetch_calls_work(tmp_path, make_session, mode):
    """As common.js sends them: same-origin, the CSRF header, JSON bodies or none."""
    client = browser(tmp_path, mode)
    token = csrf_token(client)
    submitted = client.post("/api/v1/alerts", {"data": "pod web-1 CrashLoopBackOff"}, format="json",
                            HTTP_X_CSRFTOKEN=token, **SAME_ORIGIN)
    assert submitted.status_code == 202, submitted.content
    pending = make_session(status="pending")
    cancelled = client.post(f"/api/v1/sessions/{pending.id}/cancel", HTTP_X_CSRFTOKEN=token, **SAME_ORIGIN)
    assert cancelled.status_code == 200, cancelled.content
    assert AlertSession.objects.get(id=pending.id).status == "cancelled"


def test_a_trusted_origin_may_post(tmp_path, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://tarsy.example.com"]
    client = browser(tmp_path, "none")
    token = csrf_token(client)
    response = client.post("/api/v1/alerts", {"data": "x"}, format="json", HTTP_X_CSRFTOKEN=token,
                           HTTP_ORIGIN="https://tarsy.example.com", HTTP_SEC_FETCH_SITE="same-site")
    assert response.status_code == 202, response.content


def test_api_clients_with_json_or_no_body_keep_working(tmp_path, make_session):
    write_config(tmp_path / "cfg", tarsy={"system": {"auth": {"mode": "token"}}})
    out = io.StringIO()
    call_command("create_api_token", "alertmanager", stdout=out)
    client = APIClient(REMOTE_ADDR="10.0.0.8", HTTP_AUTHORIZATION=f"Token {out.getvalue().strip()}")
    assert client.post("/api/v1/alerts", {"data": "x"}, format="json").status_code == 202
    pending = make_session(status="pending")
    assert client.post(f"/api/v1/sessions/{pending.id}/cancel").status_code == 200  # curl -XPOST, no body
