"""Regex masking patterns, groups, and the fail-closed / fail-open entry points."""

from __future__ import annotations

import pytest

from agents.config.schema import AlertMaskingConfig, CustomPattern, MaskingConfig
from agents.mcp.masking import (
    MASKING_FAILED_PLACEHOLDER,
    PATTERN_GROUPS,
    DataMasker,
    known_groups,
    known_patterns,
    mask_alert_data,
    mask_tool_result,
)

from .samples import HEALTHY_POD_YAML, KUBECONFIG, PEM_BLOCKS, SECRET_PASSWORD_B64, SECRET_YAML


def test_kubeconfig_credentials_are_masked_with_their_kind(masker_for):
    masked = masker_for("security", patterns=["private_key"]).mask(KUBECONFIG)

    assert "certificate-authority-data: __MASKED_CA_CERTIFICATE__" in masked
    assert "client-certificate-data: __MASKED_CERTIFICATE__" in masked
    assert "client-key-data: __MASKED_PRIVATE_KEY__" in masked
    assert "token: __MASKED_TOKEN__" in masked
    assert "server: https://10.0.1.10:6443" in masked and "current-context: prod" in masked


def test_kubernetes_group_masks_kubeconfig_ca_data_and_bearer_tokens(masker_for):
    masked = masker_for("kubernetes").mask(KUBECONFIG)

    assert "__MASKED_CA_CERTIFICATE__" in masked
    assert "kubeconfig-token-0123456789abcdefXYZ" not in masked and "token: __MASKED_TOKEN__" in masked


def test_pem_certificate_and_private_key_blocks(masker_for):
    masked = masker_for("all").mask(PEM_BLOCKS)

    assert masked == "tls.crt:\n__MASKED_CERTIFICATE__\ntls.key:\n__MASKED_PRIVATE_KEY__\n"


def test_cloud_keys_and_chat_tokens(masker_for):
    text = (
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n"
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
        "GITHUB_TOKEN=ghp_1234567890abcdefghijABCDEFGHIJ123456\n"
        "slack: xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx\n"
        "webhook https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX\n"
    )

    masked = masker_for("cloud").mask(text)

    assert masked == (
        "AWS_ACCESS_KEY_ID=__MASKED_AWS_ACCESS_KEY__\n"
        "aws_secret_access_key = __MASKED_AWS_SECRET_KEY__\n"
        "GITHUB_TOKEN=__MASKED_GITHUB_TOKEN__\n"
        "slack: __MASKED_SLACK_TOKEN__\n"
        "webhook __MASKED_SLACK_TOKEN__\n"
    )


def test_passwords_in_env_log_and_url_lines(masker_for):
    text = (
        "DB_PASSWORD=hunter2-prod\n"
        '{"password": "p@ss!word", "user": "orders"}\n'
        "2025-06-03T14:28:00Z INFO connecting with --password=s3cr3t to orders-db\n"
        "- name: POSTGRES_PASSWORD\n  value: plaintext-in-spec\n"
        "DATABASE_URL=postgres://orders:dbpass123@orders-db:5432/orders\n"
        'FATAL: password authentication failed for user "orders"\n'
    )

    masked = masker_for("basic").mask(text)

    for secret in ("hunter2-prod", "p@ss!word", "s3cr3t", "plaintext-in-spec", "dbpass123"):
        assert secret not in masked
    assert "DB_PASSWORD=__MASKED_PASSWORD__" in masked
    assert "postgres://orders:__MASKED_PASSWORD__@orders-db:5432/orders" in masked
    assert 'FATAL: password authentication failed for user "orders"' in masked
    assert '"user": "orders"' in masked


def test_api_keys_tokens_and_emails(masker_for):
    text = (
        "X-API-Key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0\n"
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
        ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\n"
        "access_token=ya29.a0AfH6SMBx3dkLmNoPqRsTuVwXyZ0123456789\n"
        "owner: oncall-team@example.com\n"
    )

    masked = masker_for("security").mask(text)

    assert masked == (
        "X-API-Key: __MASKED_API_KEY__\n"
        "Authorization: Bearer __MASKED_TOKEN__\n"
        "access_token=__MASKED_TOKEN__\n"
        "owner: __MASKED_EMAIL__\n"
    )


def test_ssh_keys_and_base64_values(masker_for):
    text = (
        "authorized: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ops@bastion\n"
        "blob: dGhpc0lzQVNlY3JldFZhbHVlMTIzNDU2Nzg5\n"
        "user: YWRtaW4=\n"
    )

    masked = masker_for("all").mask(text)

    assert masked == "authorized: __MASKED_SSH_KEY__\nblob: __MASKED_BASE64_VALUE__\nuser: __MASKED_BASE64_SHORT__\n"


def test_all_patterns_leave_ordinary_pod_output_readable(masker_for):
    masked = masker_for("all").mask(HEALTHY_POD_YAML)

    assert masked == HEALTHY_POD_YAML


def test_ordinary_words_ids_and_timestamps_are_not_masked(masker_for):
    text = (
        "status: Running\nready: True\nport: 5432\nimagePullPolicy: IfNotPresent\ndnsPolicy: ClusterFirst\n"
        "hash: 7d9c8b6f5\nimage: nginx:1.25.3\ntime: 2025-06-03T14:28:11Z\n"
        "reason: terminationMessagePathCrashLoopBackOff\n"
        "path: /var/lib/postgresql/data/pgdata\nmessage: Back-off restarting failed container web\n"
    )

    assert masker_for("all").mask(text) == text


def test_custom_patterns_apply_after_builtins_with_backreferences():
    cfg = MaskingConfig(
        pattern_groups=["basic"],
        custom_patterns=[CustomPattern(name="card", pattern=r"\b(\d{4})\d{8}(\d{4})\b", replacement=r"\1-XXXX-\2")],
    )

    masked = DataMasker.from_config(cfg).mask("card 4111111111111111 password=abc12345")

    assert masked == "card 4111-XXXX-1111 password=__MASKED_PASSWORD__"


def test_disabled_masking_returns_text_unchanged():
    cfg = MaskingConfig(enabled=False, pattern_groups=["all"])

    assert mask_tool_result(SECRET_YAML, cfg) == SECRET_YAML


def test_empty_selection_still_masks_secrets_and_tokens():
    masked = mask_tool_result(SECRET_YAML + "token: abcdefghijklmnopqrstuvwxyz012345\n", MaskingConfig())

    assert SECRET_PASSWORD_B64 not in masked and "__MASKED_TOKEN__" in masked


def test_tool_result_masking_fails_closed():
    cfg = MaskingConfig.model_construct(pattern_groups=["no-such-group"])  # the schema refuses it: unvalidated

    assert mask_tool_result(SECRET_YAML, cfg) == MASKING_FAILED_PLACEHOLDER


def test_tool_result_masking_fails_closed_when_a_custom_pattern_breaks():
    # A replacement referring to a group the pattern lacks: the schema refuses it; if one got through, it raises.
    bad = CustomPattern.model_construct(name="bad", pattern="secret", replacement=r"\2")  # the schema refuses it
    cfg = MaskingConfig.model_construct(custom_patterns=[bad])

    assert mask_tool_result("the secret is out", cfg) == MASKING_FAILED_PLACEHOLDER


def test_alert_masking_masks_with_its_group_and_never_fails_open():
    alert = "pod web failing; owner oncall@example.com; DB_PASSWORD=hunter2-prod"

    assert mask_alert_data(alert, AlertMaskingConfig(pattern_group="security")) == (
        "pod web failing; owner __MASKED_EMAIL__; DB_PASSWORD=__MASKED_PASSWORD__"
    )
    with pytest.raises(ValueError, match="no-such-group"):  # the schema refuses it: unvalidated
        mask_alert_data(alert, AlertMaskingConfig.model_construct(enabled=True, pattern_group="no-such-group"))
    assert mask_alert_data(alert, AlertMaskingConfig(enabled=False)) == alert


def test_groups_follow_the_documented_composition():
    credentials = {
        "api_key", "password", "token", "secret_key", "private_key", "aws_access_key", "aws_secret_key",
        "github_token", "slack_token",
    }
    assert PATTERN_GROUPS["basic"] == ["api_key", "password"]
    assert set(PATTERN_GROUPS["secrets"]) == credentials
    assert set(PATTERN_GROUPS["security"]) == credentials | {
        "kubernetes_secret", "certificate", "certificate_authority_data", "email", "ssh_key",
    }
    assert set(PATTERN_GROUPS["kubernetes"]) == credentials | {"kubernetes_secret", "certificate_authority_data"}
    assert set(PATTERN_GROUPS["all"]) == set(known_patterns())
    assert "cloud" in known_groups() and len(known_patterns()) == 16


def test_unknown_names_are_rejected_when_building():
    with pytest.raises(ValueError, match="no-such-pattern"):
        DataMasker.from_config(MaskingConfig(patterns=["no-such-pattern"]))


def test_masker_is_compiled_once_per_config():
    cfg = MaskingConfig(pattern_groups=["security"])

    assert DataMasker.from_config(cfg) is DataMasker.from_config(MaskingConfig(pattern_groups=["security"]))
