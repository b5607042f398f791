"""Class 2: every PEM block (any label, with or without END, raw or `\\n`-escaped) under the default groups."""

from __future__ import annotations

import json

import pytest

from agents.config.schema import AlertMaskingConfig
from agents.mcp.masking import mask_alert_data

from .conftest import masker

BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw"
BODY2 = "7bbPxdhDkdHSaDlHGfiDpbZ3b1BONNJMQ0rT8Ej3mOuwy2kE5DNGq8RuXkTcqwIDAQAB"

PEM_KEYS = {
    "rsa": f"-----BEGIN RSA PRIVATE KEY-----\n{BODY}\n{BODY2}\n-----END RSA PRIVATE KEY-----",
    "openssh": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{BODY}\n{BODY2}\n-----END OPENSSH PRIVATE KEY-----",
    "ec": f"-----BEGIN EC PRIVATE KEY-----\n{BODY}\n-----END EC PRIVATE KEY-----",
    "pkcs8": f"-----BEGIN PRIVATE KEY-----\n{BODY}\n{BODY2}\n-----END PRIVATE KEY-----",
    "encrypted": f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{BODY}\n{BODY2}\n-----END ENCRYPTED PRIVATE KEY-----",
    "legacy-encrypted": (
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n"
        f"{BODY}\n-----END RSA PRIVATE KEY-----"
    ),
    "pgp": f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{BODY}\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----",
    "any-label": f"-----BEGIN EC PARAMETERS-----\n{BODY}\n-----END EC PARAMETERS-----",
    "certificate": f"-----BEGIN CERTIFICATE-----\n{BODY}\n-----END CERTIFICATE-----",
}

GCP_SERVICE_ACCOUNT = {
    "type": "service_account",
    "project_id": "shop-prod",
    "private_key_id": "0123456789abcdef0123456789abcdef01234567",
    "private_key": f"-----BEGIN PRIVATE KEY-----\n{BODY}\n{BODY2}\n-----END PRIVATE KEY-----\n",
    "client_email": "orders@shop-prod.iam.gserviceaccount.com",
    "token_uri": "https://oauth2.googleapis.com/token",
}


@pytest.mark.parametrize("kind", sorted(PEM_KEYS))
def test_pem_block_in_a_yaml_secret_value_is_masked(default_masker, kind):
    indented = PEM_KEYS[kind].replace("\n", "\n    ")
    text = f"tls:\n  key: |\n    {indented}\n  host: web.shop.svc\n"

    masked = default_masker.mask(text)

    assert BODY not in masked and "-----BEGIN" not in masked
    assert masked.startswith("tls:\n  key: |\n    __MASKED_") and masked.endswith("\n  host: web.shop.svc\n")


@pytest.mark.parametrize("kind", sorted(PEM_KEYS))
def test_pem_block_with_escaped_newlines_in_json_text_is_masked(default_masker, kind):
    text = json.dumps({"kind": kind, "pem": PEM_KEYS[kind] + "\n"})

    masked = default_masker.mask(text)

    assert BODY not in masked and "BEGIN" not in masked
    assert json.loads(masked)["kind"] == kind


def test_gcp_service_account_json_tool_output_is_masked(default_masker):
    masked = default_masker.mask(json.dumps(GCP_SERVICE_ACCOUNT, indent=2))

    assert BODY not in masked and BODY2 not in masked
    doc = json.loads(masked)
    assert doc["private_key"].startswith("__MASKED_PRIVATE_KEY__")
    assert doc["project_id"] == "shop-prod" and doc["token_uri"] == "https://oauth2.googleapis.com/token"


def test_gcp_service_account_in_an_alert_is_masked():
    masked = mask_alert_data({"alert": "key rotated", "sa": GCP_SERVICE_ACCOUNT}, AlertMaskingConfig())

    assert BODY not in json.dumps(masked)
    assert masked["sa"]["private_key"].startswith("__MASKED_PRIVATE_KEY__")


def test_begin_without_end_is_masked_to_the_end_of_the_value(default_masker):
    truncated = f"-----BEGIN RSA PRIVATE KEY-----\n{BODY}\n{BODY2[:30]}"
    text = json.dumps({"key": truncated, "note": "output truncated"})

    masked = default_masker.mask(text)

    assert BODY not in masked and BODY2[:30] not in masked
    assert json.loads(masked)["note"] == "output truncated"


def test_begin_without_end_in_plain_text_is_masked(default_masker):
    text = f"ssh key follows\n-----BEGIN OPENSSH PRIVATE KEY-----\n{BODY}\n{BODY2}\n"

    masked = default_masker.mask(text)

    assert BODY not in masked and BODY2 not in masked
    assert masked.startswith("ssh key follows\n")


def test_two_blocks_in_one_bundle_are_masked_separately(default_masker):
    text = PEM_KEYS["certificate"] + "\n" + PEM_KEYS["pkcs8"] + "\n"

    masked = default_masker.mask(text)

    assert BODY not in masked
    assert masked.count("__MASKED_") == 2


CA_DATA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJkekNDQVIyZ0F3SUJBZ0lCQURBS0JnZ3Foa2pPUFFRRA=="


@pytest.mark.parametrize("key", ["certificate-authority-data", "Certificate-Authority-Data",
                                 "CERTIFICATE-AUTHORITY-DATA"])
@pytest.mark.parametrize("shape", ["yaml", "json"])
def test_kubeconfig_ca_data_is_masked_whatever_the_case_of_its_key(key, shape):
    """The original projects' case: a kubeconfig written with `Certificate-Authority-Data:` in capitals."""
    text = f"clusters:\n- cluster:\n    {key}: {CA_DATA}\n" if shape == "yaml" else json.dumps({key: CA_DATA})

    for groups in (["security"], ["kubernetes"]):
        masked = masker(*groups).mask(text)

        assert CA_DATA not in masked and f"{key}" in masked and "__MASKED_CA_CERTIFICATE__" in masked
