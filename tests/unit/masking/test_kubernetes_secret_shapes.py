"""Class 6: Kubernetes Secrets in the shapes tools return them: CRLF, flow style, escaped inside other
strings, and nested deeper than any parser should follow."""

from __future__ import annotations

import json

import pytest
import yaml

from agents.config.schema import AlertMaskingConfig, MaskingConfig
from agents.mcp.masking import (
    MASKING_FAILED_PLACEHOLDER,
    NESTED_VALUE_MASK,
    SECRET_DATA_MASK,
    MaskingError,
    mask_alert_data,
    mask_tool_result,
)

from .conftest import masker

PW = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk"  # super-secret-password
USER = "YWRtaW4="
SECRET_YAML = f"""apiVersion: v1
kind: Secret
metadata:
  name: db-credentials
  namespace: shop
type: Opaque
data:
  password: {PW}
  username: {USER}
"""
SECRET_DOC = {
    "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db-credentials", "namespace": "shop"},
    "type": "Opaque", "data": {"password": PW, "username": USER},
}
K8S = ["kubernetes"]


def _k8s():
    return masker(*K8S)


def test_secret_yaml_with_crlf_line_endings_is_masked():
    text = SECRET_YAML.replace("\n", "\r\n")

    masked = _k8s().mask(text)

    assert PW not in masked and USER not in masked
    assert yaml.safe_load(masked)["data"] == {"password": SECRET_DATA_MASK, "username": SECRET_DATA_MASK}
    assert "\r\n  name: db-credentials\r\n" in masked


def test_flow_style_secret_on_one_line_is_masked():
    text = f"{{kind: Secret, metadata: {{name: db}}, data: {{password: {PW}, username: {USER}}}}}\n"

    masked = _k8s().mask(text)

    assert PW not in masked and USER not in masked
    assert yaml.safe_load(masked) == {
        "kind": "Secret", "metadata": {"name": "db"},
        "data": {"password": SECRET_DATA_MASK, "username": SECRET_DATA_MASK},
    }


def test_flow_style_secret_with_data_before_kind_inside_a_list_is_masked():
    text = (
        "items:\n"
        f"- {{apiVersion: v1, data: {{password: {PW}}}, kind: Secret, metadata: {{name: a}}}}\n"
        "- {apiVersion: v1, data: {LOG_LEVEL: debug}, kind: ConfigMap, metadata: {name: b}}\n"
    )

    masked = _k8s().mask(text)

    items = yaml.safe_load(masked)["items"]
    assert items[0]["data"] == {"password": SECRET_DATA_MASK}
    assert items[1]["data"] == {"LOG_LEVEL": "debug"}


def test_multi_line_flow_secret_is_masked():
    text = f"{{\n  kind: Secret,\n  data: {{\n    password: {PW},\n    'tls.key': \"{USER}\"\n  }}\n}}\n"

    masked = _k8s().mask(text)

    assert PW not in masked and USER not in masked
    assert yaml.safe_load(masked)["data"] == {"password": SECRET_DATA_MASK, "tls.key": SECRET_DATA_MASK}


def test_secret_manifest_escaped_in_a_yaml_configmap_value_is_masked():
    manifest = json.dumps(SECRET_YAML)  # "apiVersion: v1\nkind: Secret\n..." as a YAML double-quoted scalar
    text = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bootstrap\ndata:\n  secret.yaml: {manifest}\n"

    masked = _k8s().mask(text)

    assert PW not in masked and USER not in masked
    inner = yaml.safe_load(yaml.safe_load(masked)["data"]["secret.yaml"])
    assert inner["data"] == {"password": SECRET_DATA_MASK, "username": SECRET_DATA_MASK}
    assert inner["metadata"]["name"] == "db-credentials"


def test_secret_manifest_escaped_in_a_json_configmap_value_is_masked():
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bootstrap"},
                 "data": {"secret.yaml": SECRET_YAML, "secret.json": json.dumps(SECRET_DOC)}}

    masked = _k8s().mask(json.dumps(configmap, indent=4))

    assert PW not in masked and USER not in masked
    data = json.loads(masked)["data"]
    assert yaml.safe_load(data["secret.yaml"])["data"]["password"] == SECRET_DATA_MASK
    assert json.loads(data["secret.json"])["data"]["password"] == SECRET_DATA_MASK


def test_last_applied_configuration_in_single_quoted_yaml_is_masked():
    applied = json.dumps(SECRET_DOC, separators=(",", ":"))
    text = SECRET_YAML.replace(
        "metadata:\n", f"metadata:\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{applied}'\n"
    )

    masked = _k8s().mask(text)

    assert PW not in masked and USER not in masked
    doc = yaml.safe_load(masked)
    annotation = doc["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(annotation)["data"] == {"password": SECRET_DATA_MASK, "username": SECRET_DATA_MASK}


def test_secret_escaped_twice_inside_json_is_masked():
    applied = json.dumps(SECRET_DOC)
    wrapper = {"kind": "ConfigMap", "data": {"audit.json": json.dumps({"object": applied})}}

    masked = _k8s().mask(json.dumps(wrapper))

    assert PW not in masked and USER not in masked
    inner = json.loads(json.loads(json.loads(masked)["data"]["audit.json"])["object"])
    assert inner["data"]["password"] == SECRET_DATA_MASK


def test_escaped_secret_json_in_a_log_line_is_masked():
    line = 'level=info msg="applied" object="' + json.dumps(SECRET_DOC).replace('"', '\\"') + '"\n'

    masked = _k8s().mask(line)

    assert PW not in masked and USER not in masked
    assert masked.startswith('level=info msg="applied" object="{\\"apiVersion\\"')


def _nested(depth: int, leaf):
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("depth", [150, 5000])
def test_deeply_nested_secret_json_tool_output_is_withheld(depth):
    text = json.dumps(_nested(depth - 1, SECRET_DOC)) if depth < 900 else (
        '{"a": ' * depth + json.dumps(SECRET_DOC) + "}" * depth
    )

    assert mask_tool_result(text, MaskingConfig(pattern_groups=K8S)) == MASKING_FAILED_PLACEHOLDER


def test_deeply_nested_alert_masks_the_too_deep_value_whole():
    alert = {"alert": "deep", "payload": _nested(3000, {"password": "hunter2", "secret": SECRET_DOC})}

    masked = mask_alert_data(alert, AlertMaskingConfig(pattern_group="kubernetes"))

    dumped = json.dumps(masked)  # bounded depth: serialises without RecursionError
    assert "hunter2" not in dumped and PW not in dumped
    assert masked["alert"] == "deep" and NESTED_VALUE_MASK in dumped


def test_deeply_nested_secret_in_alert_text_is_refused():
    text = '{"a": ' * 5000 + json.dumps(SECRET_DOC) + "}" * 5000

    with pytest.raises(MaskingError, match="nested"):
        mask_alert_data(text, AlertMaskingConfig(pattern_group="kubernetes"))


def test_secret_manifest_in_an_alert_dict_is_masked_by_the_default_alert_group():
    masked = mask_alert_data({"alert": "secret rotated", "object": SECRET_DOC}, AlertMaskingConfig())

    assert PW not in json.dumps(masked) and USER not in json.dumps(masked)
    assert masked["object"]["data"] == {"password": SECRET_DATA_MASK, "username": SECRET_DATA_MASK}
