"""The structural Kubernetes Secret masker, on kubectl / MCP-server shaped output."""

from __future__ import annotations

import json

import yaml

from agents.mcp.masking import SECRET_DATA_MASK

from .samples import (
    CONFIGMAP_YAML,
    SECRET_JSON,
    SECRET_LIST_YAML,
    SECRET_PASSWORD_B64,
    SECRET_USER_B64,
    SECRET_YAML,
)


def test_secret_yaml_values_are_masked_and_keys_kept(masker_for):
    masked = masker_for("kubernetes").mask(SECRET_YAML)

    assert SECRET_PASSWORD_B64 not in masked and SECRET_USER_B64 not in masked
    assert "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t" not in masked  # multi-line value dropped entirely
    doc = yaml.safe_load(masked)
    assert doc["data"] == {"password": SECRET_DATA_MASK, "tls.key": SECRET_DATA_MASK, "username": SECRET_DATA_MASK}
    assert doc["metadata"]["name"] == "db-credentials"
    assert doc["metadata"]["uid"] == "3f1c2a4e-7d9c-4b6f-9a51-2e8d1c0b7a66"


def test_secret_inside_last_applied_annotation_is_masked(masker_for):
    masked = masker_for("kubernetes").mask(SECRET_YAML)

    annotation = yaml.safe_load(masked)["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    applied = json.loads(annotation)
    assert applied["data"] == {"password": SECRET_DATA_MASK, "username": SECRET_DATA_MASK}
    assert applied["metadata"]["name"] == "db-credentials"


def test_secret_json_with_string_data_and_escaped_annotation_is_masked(masker_for):
    masked = masker_for("kubernetes").mask(SECRET_JSON)

    doc = json.loads(masked)
    assert doc["data"] == {"password": SECRET_DATA_MASK, "username": SECRET_DATA_MASK}
    assert doc["stringData"] == {"api-token": SECRET_DATA_MASK}
    applied = json.loads(doc["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert applied["data"]["password"] == SECRET_DATA_MASK
    assert '\n    "apiVersion": "v1",' in masked  # kubectl's 4-space layout kept


def test_secret_list_masks_only_secrets(masker_for):
    masked = masker_for("kubernetes").mask(SECRET_LIST_YAML)

    items = yaml.safe_load(masked)["items"]
    assert items[0]["data"] == {"password": SECRET_DATA_MASK}
    assert SECRET_PASSWORD_B64 not in masked and "second-plain-value" not in masked
    assert items[1]["data"] == {"LOG_LEVEL": "debug"}
    assert items[2]["stringData"] == {"token": SECRET_DATA_MASK}


def test_json_secret_list_embedded_after_a_text_prefix_is_masked(masker_for):
    secrets = {
        "apiVersion": "v1",
        "kind": "SecretList",
        "items": [
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}, "data": {"key": SECRET_PASSWORD_B64}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"key": "visible"}},
        ],
    }
    text = "Resources found:\n" + json.dumps(secrets, indent=2) + "\nDone."

    masked = masker_for("kubernetes").mask(text)

    assert masked.startswith("Resources found:\n") and masked.endswith("\nDone.")
    doc = json.loads(masked.split("\n", 1)[1].rsplit("\n", 1)[0])
    assert doc["items"][0]["data"] == {"key": SECRET_DATA_MASK}
    assert doc["items"][1]["data"] == {"key": "visible"}


def test_multi_document_yaml_with_prefix_lines_masks_the_secret_only(masker_for):
    text = "# kubectl get secret,cm -o yaml\nOutput follows:\n" + CONFIGMAP_YAML + "---\n" + SECRET_YAML

    masked = masker_for("kubernetes").mask(text)

    assert CONFIGMAP_YAML in masked
    assert SECRET_PASSWORD_B64 not in masked and "password: '[MASKED_SECRET_DATA]'" in masked


def test_configmap_is_left_byte_for_byte(masker_for):
    assert masker_for("kubernetes").mask(CONFIGMAP_YAML) == CONFIGMAP_YAML


def test_secret_referenced_by_an_event_is_not_treated_as_a_secret_object(masker_for):
    event = "- InvolvedObject:\n    Kind: Secret\n    Name: db\n  Message: 'data: updated'\n  Reason: Updated\n"
    assert masker_for("kubernetes").mask(event) == event


def test_flow_style_secret_data_is_masked(masker_for):
    text = "kind: Secret\nmetadata: {name: x}\ndata: {password: aHVudGVyMg==, user: YWRtaW4=}\n"

    masked = masker_for("kubernetes").mask(text)

    assert "aHVudGVyMg==" not in masked and "YWRtaW4=" not in masked
    assert yaml.safe_load(masked)["data"] == {"password": SECRET_DATA_MASK, "user": SECRET_DATA_MASK}
