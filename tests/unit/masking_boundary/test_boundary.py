"""The boundary helpers: outside text masked with the alert masking the active configuration selects."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agents.config.schema import AlertMaskingConfig, DefaultsConfig
from agents.mcp.masking.boundary import (
    URL_CREDENTIAL_MASK,
    WITHHELD,
    configure,
    mask_arguments,
    mask_text,
    mask_url,
)
from tarsy.config import set_config
from tests.unit.mcp.conftest import tarsy_config

QUESTION = "can you retry with password: hunter2xyz? owner is oncall@example.com"


def _activate(pattern_group: str, enabled: bool = True) -> None:
    """Make a configuration with this alert masking the process's active one, as a worker's would be."""
    alert_masking = AlertMaskingConfig(enabled=enabled, pattern_group=pattern_group)
    set_config(replace(tarsy_config({}), defaults=DefaultsConfig(alert_masking=alert_masking)))


def test_text_is_masked_with_the_group_the_alert_masking_selects():
    _activate("security")
    masked = mask_text(QUESTION)
    assert "hunter2xyz" not in masked and "oncall@example.com" not in masked
    assert masked.startswith("can you retry with password: __MASKED_")

    _activate("basic")  # no e-mail pattern in this group
    masked = mask_text(QUESTION)
    assert "hunter2xyz" not in masked and masked.endswith("owner is oncall@example.com")

    _activate("security", enabled=False)
    assert mask_text(QUESTION) == QUESTION


def test_without_an_active_configuration_the_schema_default_applies():
    set_config(None)

    assert "hunter2xyz" not in mask_text(QUESTION)


def test_a_masker_that_fails_withholds_the_text():
    configure(AlertMaskingConfig.model_construct(enabled=True, pattern_group="no-such-group"))
    try:
        assert mask_text(QUESTION) == WITHHELD
        assert mask_arguments({"q": QUESTION}) == WITHHELD
    finally:
        set_config(None)


def test_nul_characters_never_survive():
    assert "\x00" not in mask_text("a\x00b")
    assert "\x00" not in repr(mask_arguments({"k\x00": ["v\x00", {"n": "x\x00"}]}))


def test_arguments_keep_their_shape_and_lose_their_secrets():
    arguments = {"namespace": "prod", "password": "hunter2xyz", "limit": 10, "flags": ["-v", "x"],
                 "auth": {"api_key": "sk_live_abcdef1234567890"}}

    masked = mask_arguments(arguments)

    assert {k: v for k, v in masked.items() if k not in ("password", "auth")} == {
        "namespace": "prod", "limit": 10, "flags": ["-v", "x"]}
    assert masked["password"].startswith("__MASKED_") and masked["auth"]["api_key"].startswith("__MASKED_")
    assert arguments["password"] == "hunter2xyz"  # the caller's copy (what the tool gets) is untouched
    assert "hunter2xyz" not in mask_arguments("password=hunter2xyz")
    assert mask_arguments(None) is None


@pytest.mark.parametrize("url, expected", [
    ("https://github.com/org/repo/blob/main/rb.md?token=abc123secret",
     f"https://github.com/org/repo/blob/main/rb.md?token={URL_CREDENTIAL_MASK}"),
    ("https://bob:s3cret@git.example.com/rb.md", f"https://{URL_CREDENTIAL_MASK}@git.example.com/rb.md"),
    ("https://ghp_0123456789abcdefghijklmnopqrstuvwxyz@raw.githubusercontent.com/o/r/main/rb.md",
     f"https://{URL_CREDENTIAL_MASK}@raw.githubusercontent.com/o/r/main/rb.md"),
    ("https://s3.amazonaws.com/b/rb.md?X-Amz-Credential=AK%2F1&X-Amz-Signature=ff00&versionId=3",
     f"https://s3.amazonaws.com/b/rb.md?X-Amz-Credential={URL_CREDENTIAL_MASK}&X-Amz-Signature="
     f"{URL_CREDENTIAL_MASK}&versionId=3"),
    ("https://x.blob.core.windows.net/c/rb.md?sv=2022&sig=abc%3D", f"https://x.blob.core.windows.net/c/rb.md?sv=2022"
                                                                   f"&sig={URL_CREDENTIAL_MASK}"),
    ("https://wiki.example.com/rb#access_token=zzz&state=1",
     f"https://wiki.example.com/rb#access_token={URL_CREDENTIAL_MASK}&state=1"),
    ("https://github.com/org/repo/blob/main/runbooks/k8s.md?plain=1",
     "https://github.com/org/repo/blob/main/runbooks/k8s.md?plain=1"),
])
def test_runbook_urls_lose_their_credentials_and_keep_the_rest(url, expected):
    assert mask_url(url) == expected
