"""POST /api/v1/alerts and GET /api/v1/alert-types: acceptance, author, and every refusal with its reason."""

from __future__ import annotations

import pytest

from tarsy.models import AlertSession
from tests.support.configdir import PROXY_ON_LOOPBACK, write_config

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]


def test_alert_is_queued_with_text_data_and_default_type(api):
    response = api.post("/api/v1/alerts", {"data": "disk full on db-1"}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "queued"
    session = AlertSession.objects.get(id=body["session_id"])
    assert (session.alert_type, session.status, session.alert_data) == ("kubernetes", "pending", "disk full on db-1")


def test_json_alert_data_is_stored_as_text(api):
    response = api.post("/api/v1/alerts", {"alert_type": "kubernetes", "data": {"pod": "web-1", "restarts": 7}},
                        format="json")
    session = AlertSession.objects.get(id=response.json()["session_id"])
    assert '"pod": "web-1"' in session.alert_data


@pytest.mark.parametrize("headers, author", [
    ({"HTTP_X_FORWARDED_USER": "alice", "HTTP_X_FORWARDED_EMAIL": "bob@example.com"}, "alice"),
    ({"HTTP_X_FORWARDED_EMAIL": "bob@example.com"}, "bob@example.com"),
])
def test_behind_the_proxy_the_author_is_its_forwarded_user_then_email(tmp_path, api, headers, author):
    write_config(tmp_path, tarsy={"system": PROXY_ON_LOOPBACK})
    response = api.post("/api/v1/alerts", {"data": "x alert"}, format="json", **headers)
    assert AlertSession.objects.get(id=response.json()["session_id"]).author == author


@pytest.mark.parametrize("headers", [{}, {"HTTP_X_FORWARDED_USER": "alice", "HTTP_X_FORWARDED_EMAIL": "b@x.io"}])
def test_in_mode_none_the_author_is_the_local_user_whatever_the_headers(api, headers):
    response = api.post("/api/v1/alerts", {"data": "x alert"}, format="json", **headers)
    assert AlertSession.objects.get(id=response.json()["session_id"]).author == "api-client"


def test_alert_data_over_one_megabyte_is_refused_with_413(api):
    response = api.post("/api/v1/alerts", {"data": "x" * (1024 * 1024 + 1)}, format="json")
    assert response.status_code == 413
    assert response.json()["error"].startswith("alert data exceeds")
    assert not AlertSession.objects.exists()


def test_unknown_alert_type_lists_the_valid_ones(api):
    response = api.post("/api/v1/alerts", {"alert_type": "nope", "data": "x"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "unknown alert type 'nope'"
    assert "kubernetes" in body["detail"]["alert_type"][0]


@pytest.mark.parametrize("runbook, reason", [
    ("ftp://github.com/x", "Must be an http(s) URL."),
    ("https://evil.example.com/runbook.md", "not in the allowed domains"),
])
def test_bad_runbook_url_is_refused_with_reason(api, runbook, reason):
    response = api.post("/api/v1/alerts", {"data": "x", "runbook": runbook}, format="json")
    assert response.status_code == 400
    assert reason in response.json()["detail"]["runbook"][0]


def test_unknown_mcp_server_is_refused_with_reason(api):
    response = api.post("/api/v1/alerts", {"data": "x", "mcp": {"servers": [{"name": "no-such-server"}]}},
                        format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid MCP selection"
    assert "no-such-server" in str(body["detail"])


def test_missing_data_is_a_validation_error(api):
    response = api.post("/api/v1/alerts", {"alert_type": "kubernetes"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"error": "validation_error", "detail": {"data": ["This field is required."]}}


def test_malformed_json_is_a_400_not_a_500(api):
    response = api.post("/api/v1/alerts", data='{"data": ', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "malformed request body"


def test_form_encoded_body_is_refused_as_unsupported(api):
    response = api.post("/api/v1/alerts", {"data": "x"})  # multipart, as a cross-site form would send
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"


def test_alert_types_lists_configured_types_and_chains(api):
    body = api.get("/api/v1/alert-types").json()
    assert body["default_alert_type"] == "kubernetes"
    assert {"alert_type": "kubernetes", "chain_id": "kubernetes"}.items() <= body["alert_types"][0].items()


def test_unknown_api_path_and_wrong_method_answer_json(api):
    missing = api.get("/api/v1/nothing-here")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    wrong = api.get("/api/v1/alerts")
    assert wrong.status_code == 405 and wrong.json()["error"] == "method_not_allowed"
