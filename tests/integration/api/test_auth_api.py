"""Auth modes: none (loopback only), proxy (trusted proxies), token (API tokens); session login; CSRF."""

from __future__ import annotations

import hashlib
import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from rest_framework.test import APIClient

from tarsy.models import AlertOccurrence, AlertSession, APIToken
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]

ALERT = {"data": "pod web-1 CrashLoopBackOff"}


def auth_mode(tmp_path, mode: str, **system):
    write_config(tmp_path / "cfg", tarsy={"system": {"auth": {"mode": mode}, **system}})


def author_of(response) -> str:
    """Who posted the alert: the new session's author, or the occurrence's when it repeated a queued alert."""
    assert response.status_code == 202, response.content
    body = response.json()
    if body["deduplicated"]:
        return AlertOccurrence.objects.filter(session_id=body["session_id"]).latest("id").author
    return AlertSession.objects.get(id=body["session_id"]).author


def test_mode_none_refuses_non_loopback_clients():
    response = APIClient(REMOTE_ADDR="10.1.2.3").get("/api/v1/sessions")
    assert response.status_code == 403
    assert response.json() == {"error": "forbidden", "detail": "Auth mode 'none' accepts loopback clients only"}
    assert APIClient(REMOTE_ADDR="::1").get("/api/v1/sessions").status_code == 200


def test_token_mode_unauthenticated_call_gets_401(tmp_path):
    auth_mode(tmp_path, "token")
    response = APIClient(REMOTE_ADDR="127.0.0.1").post("/api/v1/alerts", ALERT, format="json")
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert response["WWW-Authenticate"] == "Token"
    bad = APIClient(HTTP_AUTHORIZATION="Token not-a-real-token").get("/api/v1/sessions")
    assert bad.status_code == 401


def test_token_mode_accepts_created_token_and_names_the_client_as_author(tmp_path):
    auth_mode(tmp_path, "token")
    out = io.StringIO()
    call_command("create_api_token", "alertmanager", stdout=out)
    client = APIClient(REMOTE_ADDR="10.0.0.8", HTTP_AUTHORIZATION=f"Token {out.getvalue().strip()}")
    # Identity headers from an untrusted address are not believed.
    assert author_of(client.post("/api/v1/alerts", ALERT, format="json", HTTP_X_FORWARDED_USER="mallory")) == \
        "alertmanager"


def test_api_tokens_are_stored_as_digests_and_shown_only_when_created(tmp_path):
    auth_mode(tmp_path, "token")
    out = io.StringIO()
    call_command("create_api_token", "alertmanager", stdout=out)
    token = out.getvalue().strip()
    assert len(token) >= 40
    assert APIToken.objects.get(user__username="alertmanager").digest == hashlib.sha256(token.encode()).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {APIToken._meta.db_table}")
        assert token not in repr(cursor.fetchall())
    client = APIClient(REMOTE_ADDR="10.0.0.8", HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/v1/sessions").status_code == 200

    again = io.StringIO()
    with pytest.raises(CommandError, match="already has a token"):
        call_command("create_api_token", "alertmanager", stdout=again)
    assert again.getvalue() == ""  # an existing token is never printed again
    rotated = io.StringIO()
    call_command("create_api_token", "alertmanager", "--rotate", stdout=rotated)
    new = rotated.getvalue().strip()
    assert new != token
    assert client.get("/api/v1/sessions").status_code == 401  # the replaced token stopped working
    assert APIClient(HTTP_AUTHORIZATION=f"Bearer {new}").get("/api/v1/sessions").status_code == 200
    assert not get_user_model().objects.get(username="alertmanager").has_usable_password()


def test_proxy_mode_trusts_identity_headers_only_from_trusted_proxies(tmp_path):
    auth_mode(tmp_path, "proxy", trusted_proxies=["10.0.0.0/24"])
    via_proxy = APIClient(REMOTE_ADDR="10.0.0.5")
    assert author_of(via_proxy.post("/api/v1/alerts", ALERT, format="json",
                                    HTTP_X_FORWARDED_EMAIL="ops@example.com")) == "ops@example.com"
    assert author_of(via_proxy.post("/api/v1/alerts", ALERT, format="json", HTTP_X_FORWARDED_USER="alice",
                                    HTTP_X_FORWARDED_EMAIL="ops@example.com")) == "alice"
    spoofed = APIClient(REMOTE_ADDR="192.168.1.9").post("/api/v1/alerts", ALERT, format="json",
                                                        HTTP_X_FORWARDED_USER="alice")
    assert spoofed.status_code == 403 and spoofed.json()["error"] == "forbidden"
    assert via_proxy.get("/api/v1/sessions").status_code == 403  # trusted address but no identity


def test_session_login_authenticates_and_is_the_author(tmp_path):
    auth_mode(tmp_path, "token")
    user = get_user_model().objects.create_user("dana", password="pw-123456")
    client = APIClient(REMOTE_ADDR="10.0.0.9")
    client.force_login(user)
    assert author_of(client.post("/api/v1/alerts", ALERT, format="json")) == "dana"


def test_session_authenticated_writes_need_the_csrf_token(tmp_path):
    auth_mode(tmp_path, "proxy")
    user = get_user_model().objects.create_user("erin", password="pw-123456")
    client = APIClient(REMOTE_ADDR="10.0.0.9", enforce_csrf_checks=True)
    client.force_login(user)
    assert client.get("/api/v1/sessions").status_code == 200  # reads need no token
    refused = client.post("/api/v1/alerts", ALERT, format="json")
    assert refused.status_code == 403 and "CSRF" in str(refused.json()["detail"])


def test_health_and_metrics_need_no_login(tmp_path):
    auth_mode(tmp_path, "token")
    client = APIClient(REMOTE_ADDR="10.0.0.9")
    assert client.get("/metrics").status_code == 200
    assert client.get("/health").status_code in (200, 503)
    assert client.get("/health").json()["checks"]["database"] == "ok"


def test_schema_and_docs_are_served(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert "/api/v1/sessions/{session_id}/chat/messages" in schema.json()["paths"]
    assert api.get("/api/docs/").status_code == 200


@pytest.mark.parametrize("mode, status", [("token", 401), ("proxy", 403)])
def test_schema_and_docs_follow_the_auth_mode(tmp_path, mode, status):
    auth_mode(tmp_path, mode, trusted_proxies=["10.0.0.5"])
    stranger = APIClient(REMOTE_ADDR="10.0.0.9")
    for url in ("/api/schema/", "/api/docs/"):
        refused = stranger.get(url, HTTP_ACCEPT="text/html,application/yaml")
        assert refused.status_code == status and refused["Content-Type"] == "application/json", refused.content
        assert refused.json()["error"] in ("unauthorized", "forbidden")
    if mode == "token":
        out = io.StringIO()
        call_command("create_api_token", "reader", stdout=out)
        allowed = APIClient(REMOTE_ADDR="10.0.0.9", HTTP_AUTHORIZATION=f"Token {out.getvalue().strip()}")
    else:
        allowed = APIClient(REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_USER="alice")
    assert allowed.get("/api/schema/").status_code == 200
    assert allowed.get("/api/docs/").status_code == 200


def test_docs_page_loads_swagger_ui_from_tarsy_itself(api):
    page = api.get("/api/docs/").content.decode()
    assert not re.search(r"https?://|cdn", page, flags=re.I)
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert {a.rsplit("/", 1)[-1] for a in assets} >= {"swagger-ui.css", "swagger-ui-bundle.js"}
    for asset in assets:
        if asset == "/api/docs/?script=":  # the start-up script, a file of its own for the CSP
            assert b"SwaggerUIBundle" in api.get(asset).content
            continue
        assert asset.startswith("/static/") and not asset.startswith("//"), asset
        response = api.get(asset)
        assert response.status_code == 200 and b"".join(response.streaming_content), asset
