"""Class 7: what is not a secret stays readable: near-miss e-mail shapes, ConfigMaps, prose, ordinary output."""

from __future__ import annotations

import json

import pytest

from .conftest import masker

GROUPS = [["all"], ["security"], ["kubernetes"], ["secrets"], []]

CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: shop
data:
  DB_HOST: orders-db
  LOG_LEVEL: info
  app.properties: |
    feature.checkout=true
    cache.ttl=300
    token.header=X-Request-Id
  nginx.conf: |
    server { listen 8080; location / { proxy_pass http://web:8080; } }
"""

PROSE = (
    "The pod web-7d9c8b6f5-x2k4q restarted 14 times: the readiness probe failed because the database was "
    "unreachable, so requests timed out. Rotate the password in the vault, then restart the deployment; "
    "the token cache and the secret store recover on their own. See https://runbooks.shop.io/db#timeouts "
    "or ask oncall. Kind: Secret references in events are names, not data."
)


@pytest.mark.parametrize("text", [
    "user@domain..com",
    "user@-domain.com",
    "call@module.Method()",
    "see handler@Controller.handle(request) in the trace",
    "image registry.example.com/shop/web@sha256:9b2a4c6e8f0a1b3c5d7e9f1a3b5c7d9e",
    "decorator @property and @staticmethod",
])
@pytest.mark.parametrize("groups", [["all"], ["security"]])
def test_near_miss_email_shapes_stay_intact(text, groups):
    assert masker(*groups).mask(text) == text


@pytest.mark.parametrize("groups", [["all"], ["security"]])
def test_real_email_addresses_are_still_masked(groups):
    masked = masker(*groups).mask("owner: oncall-team@example.com, cc Jane.Doe+alerts@mail.shop.co.uk.")

    assert masked == "owner: __MASKED_EMAIL__, cc __MASKED_EMAIL__."


@pytest.mark.parametrize("groups", GROUPS, ids=lambda g: "+".join(g) or "default")
def test_configmap_yaml_and_json_are_untouched(groups):
    as_json = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-config"},
                          "data": {"DB_HOST": "orders-db", "LOG_LEVEL": "info"}}, indent=4)

    assert masker(*groups).mask(CONFIGMAP) == CONFIGMAP
    assert masker(*groups).mask(as_json) == as_json


@pytest.mark.parametrize("groups", GROUPS, ids=lambda g: "+".join(g) or "default")
def test_prose_is_untouched(groups):
    assert masker(*groups).mask(PROSE) == PROSE


@pytest.mark.parametrize("groups", GROUPS, ids=lambda g: "+".join(g) or "default")
def test_ordinary_tool_output_is_untouched(groups):
    text = (
        "NAME                     READY   STATUS             RESTARTS   AGE\n"
        "web-7d9c8b6f5-x2k4q      0/1     CrashLoopBackOff   14         2h\n"
        "Events:\n  Warning  BackOff  kubelet  Back-off restarting failed container web\n"
        "  Normal   Pulled   kubelet  Container image \"nginx:1.25.3\" already present on machine\n"
        "volumes: [{name: creds, secret: {secretName: orders-db-credentials}}]\n"
        "env: [{name: DB_PASSWORD_FILE_PATH, valueFrom: {secretKeyRef: {key: password, name: db}}}]\n"
        "max_tokens: 4096, tokens_used: 1200, token_type: Bearer\n"
        "http://10.0.1.10:6443/api/v1/namespaces/shop/pods?limit=500\n"
    )

    assert masker(*groups).mask(text) == text
