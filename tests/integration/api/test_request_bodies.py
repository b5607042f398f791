"""Bodies past DATA_UPLOAD_MAX_MEMORY_SIZE are a 413 in the API's error shape on every intake endpoint, and a
chunked body (no Content-Length) is read like any other."""

from __future__ import annotations

import json

import pytest
from django.test import Client

pytestmark = [pytest.mark.django_db]

BIG = json.dumps({"data": "x" * (3 * 1024 * 1024)})
INTAKE = ["/api/v1/alerts", "/api/v1/alerts/alertmanager", "/api/v1/alerts/grafana", "/api/v1/alerts/pagerduty",
          "/api/v1/slack/events", "/api/v1/slack/commands"]


@pytest.mark.parametrize("path", INTAKE)
def test_a_body_over_the_limit_is_a_413_in_the_api_shape(path):
    response = Client(REMOTE_ADDR="127.0.0.1").post(path, BIG, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {"error": "payload_too_large", "detail": "The request body exceeds 3145728 bytes."}


def test_a_body_within_the_limit_still_reaches_the_view():
    response = Client(REMOTE_ADDR="127.0.0.1").post("/api/v1/alerts", json.dumps({"data": "x" * (2 * 1024 * 1024)}),
                                                    content_type="application/json")
    assert response.status_code == 413
    assert response.json()["error"] == "alert data exceeds 1048576 bytes"  # the service's own 1 MB limit
