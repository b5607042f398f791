"""Class 1: secrets inside JSON strings, where quotes arrive escaped (`\\"`), in alerts and tool output."""

from __future__ import annotations

import json

from agents.config.schema import AlertMaskingConfig
from agents.mcp.masking import mask_alert_data

STRIPE_KEY = "sk_test_51HxYzAbCdEfGhIjKlMnOpQr"


def _alert(data):
    return mask_alert_data(data, AlertMaskingConfig())


def test_api_key_in_a_config_string_of_an_alert_dict_is_masked():
    masked = _alert({"config": f'api_key: "{STRIPE_KEY}"'})

    assert STRIPE_KEY not in json.dumps(masked)
    assert masked == {"config": 'api_key: "__MASKED_API_KEY__"'}


def test_api_key_in_json_text_is_masked_inside_the_escaped_quotes(default_masker):
    text = json.dumps({"config": f'api_key: "{STRIPE_KEY}"'})  # {"config": "api_key: \"sk_test_...\""}

    masked = default_masker.mask(text)

    assert STRIPE_KEY not in masked
    assert json.loads(masked) == {"config": 'api_key: "__MASKED_API_KEY__"'}


def test_escaped_password_is_replaced_whole_and_the_json_stays_valid(default_masker):
    text = json.dumps({"log": 'password: "hunter2xyz"'}, indent=2)

    masked = default_masker.mask(text)

    assert "hunter2xyz" not in masked
    assert '__MASKED_PASSWORD__"hunter2xyz' not in masked
    assert json.loads(masked) == {"log": 'password: "__MASKED_PASSWORD__"'}


def test_alertmanager_annotations_with_escaped_values_are_masked(default_masker):
    alert = {
        "receiver": "tarsy",
        "alerts": [{
            "labels": {"alertname": "DBConnFailed", "pod": "orders-7d9c"},
            "annotations": {
                "description": 'connect failed: dsn="host=db user=orders password=\\"Tr0ub4dor&3\\""',
                "summary": 'retrying with token: "ghs_abcdefghijklmnopqrstuvwxyz0123456789"',
            },
        }],
    }
    text = json.dumps(alert, indent=2)

    masked = default_masker.mask(text)

    assert "Tr0ub4dor" not in masked and "ghs_abcdefghijklmnopqrstuvwxyz0123456789" not in masked
    doc = json.loads(masked)
    assert doc["alerts"][0]["labels"] == {"alertname": "DBConnFailed", "pod": "orders-7d9c"}


def test_json_inside_a_json_string_inside_json_text_is_masked(default_masker):
    inner = json.dumps({"db": {"password": "p4ss word", "api_key": STRIPE_KEY}})
    text = json.dumps({"event": "config reloaded", "payload": inner})

    masked = default_masker.mask(text)

    assert "p4ss word" not in masked and STRIPE_KEY not in masked
    assert json.loads(json.loads(masked)["payload"])["db"] == {
        "password": "__MASKED_PASSWORD__", "api_key": "__MASKED_API_KEY__",
    }


def test_values_whose_key_names_a_secret_are_masked_whole_in_an_alert_dict():
    alert = {
        "service": "orders",
        "db": {"host": "orders-db", "password": "hunter2 with spaces", "DB_PASS": 123456},
        "credentials": {"client_secret": "a,b c", "private_key": "not-a-pem-but-secret", "api_key": "k"},
        "auth": {"token": "short", "refresh_token": "r1-refresh"},
        "passwordFile": "/etc/orders/password",
        "secretName": "orders-db-credentials",
    }

    masked = _alert(alert)

    dumped = json.dumps(masked)
    for secret in ("hunter2 with spaces", "123456", "a,b c", "not-a-pem-but-secret", '"k"', "short", "r1-refresh"):
        assert secret not in dumped
    assert masked["db"]["host"] == "orders-db"
    assert masked["db"]["password"] == "__MASKED_PASSWORD__"
    assert masked["credentials"]["private_key"] == "__MASKED_PRIVATE_KEY__"
    assert masked["auth"]["token"] == "__MASKED_TOKEN__"
    assert masked["passwordFile"] == "/etc/orders/password"  # a path, not a password
    assert masked["secretName"] == "orders-db-credentials"


def test_double_escaped_values_are_masked(default_masker):
    # A log line quoted twice: password: \\\"x y\\\" in the JSON text.
    text = json.dumps({"line": json.dumps({"msg": 'login password: "x y z" accepted'})})

    masked = default_masker.mask(text)

    assert "x y z" not in masked
    assert json.loads(json.loads(masked)["line"]) == {"msg": 'login password: "__MASKED_PASSWORD__" accepted'}


def test_keys_are_masked_as_text_without_two_of_them_merging():
    masked = _alert({"acks": {"alice@example.com": "ok", "bob@example.com": "pending"}})

    assert masked == {"acks": {"__MASKED_EMAIL__": "ok", "__MASKED_EMAIL__#2": "pending"}}
