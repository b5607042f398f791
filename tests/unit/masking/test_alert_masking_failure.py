"""Class 8 (alerts): masking that cannot be done rejects the alert with a JSON error and stores nothing."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from agents.config.schema import AlertMaskingConfig
from agents.mcp.masking import MaskingError, mask_alert_data
from tarsy.models import AlertSession
from tests.support.configdir import write_config

DEEP_SECRET = '{"a": ' * 5000 + json.dumps({"kind": "Secret", "data": {"password": "aHVudGVyMg=="}}) + "}" * 5000


def test_a_masker_error_propagates_instead_of_returning_the_alert_unmasked():
    broken = AlertMaskingConfig.model_construct(enabled=True, pattern_group="no-such-group")
    alert = "pod web failing; DB_PASSWORD=hunter2-prod"

    with pytest.raises(ValueError, match="no-such-group"):
        mask_alert_data(alert, broken)


def test_alert_text_that_cannot_be_masked_raises_a_masking_error():
    with pytest.raises(MaskingError):
        mask_alert_data(DEEP_SECRET, AlertMaskingConfig(pattern_group="kubernetes"))


@pytest.mark.services
@pytest.mark.django_db
def test_unmaskable_alert_is_refused_with_a_json_400_and_nothing_is_stored(tmp_path):
    write_config(tmp_path, tarsy={"defaults": {"alert_masking": {"enabled": True, "pattern_group": "kubernetes"}}})

    response = APIClient(REMOTE_ADDR="127.0.0.1").post("/api/v1/alerts", {"data": DEEP_SECRET}, format="json")

    assert response.status_code == 400, response.content
    body = response.json()
    assert set(body) == {"error", "detail"} and "nested" in json.dumps(body)
    assert not AlertSession.all_objects.exists()


@pytest.mark.services
@pytest.mark.django_db
def test_submitted_alert_is_stored_masked_as_valid_json():
    alert = {"config": 'api_key: "sk_test_51HxYzAbCdEfGhIjKlMnOpQr"', "db": {"password": "hunter2 with spaces"}}

    response = APIClient(REMOTE_ADDR="127.0.0.1").post("/api/v1/alerts", {"data": alert}, format="json")

    assert response.status_code == 202, response.content
    stored = AlertSession.objects.get(id=response.json()["session_id"]).alert_data
    assert json.loads(stored) == {"config": 'api_key: "__MASKED_API_KEY__"', "db": {"password": "__MASKED_PASSWORD__"}}


@pytest.mark.services
@pytest.mark.django_db
def test_alert_nested_deeper_than_the_limit_is_stored_with_that_value_masked():
    from tarsy.services.intake.alerts import session_submit

    alert = {"alert": "deep"}
    node = alert
    for _ in range(3000):
        node["a"] = {}
        node = node["a"]
    node["password"] = "hunter2"

    session = session_submit(data=alert)

    assert "hunter2" not in session.alert_data and json.loads(session.alert_data)["alert"] == "deep"
