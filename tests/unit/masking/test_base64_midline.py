"""Class 5: base64 values are masked wherever they sit on a line, not only at its end."""

from __future__ import annotations

import pytest

from .conftest import masker


def test_two_base64_values_on_one_line_are_both_masked():
    masked = masker("all").mask("username: YWRtaW4= password: cGFzcw==")

    assert masked == "username: __MASKED_BASE64_SHORT__ password: __MASKED_PASSWORD__"


@pytest.mark.parametrize("text, secrets", [
    ("creds username: YWRtaW4= host: db-1 port: 5432\n", ["YWRtaW4="]),
    ("user:\tYWRtaW4=\tpass:\tcGFzcw==\tok\n", ["YWRtaW4=", "cGFzcw=="]),
    ("'user': 'YWRtaW4=' 'key': 'a2V5MQ=='\n", ["YWRtaW4=", "a2V5MQ=="]),
    ("decoded from data.user: dXNlcg== (4 bytes) and data.pin: MTIzNA== (4 bytes)\n", ["dXNlcg==", "MTIzNA=="]),
])
def test_short_base64_values_followed_by_more_text_are_masked(text, secrets):
    masked = masker("all").mask(text)

    for secret in secrets:
        assert secret not in masked


def test_long_base64_between_words_is_masked():
    blob = "c3VwZXItc2VjcmV0LXBhc3N3b3JkLTEyMzQ1Ng=="
    masked = masker("all").mask(f"value {blob} was rejected\n")

    assert masked == "value __MASKED_BASE64_VALUE__ was rejected\n"


def test_mid_line_base64_does_not_swallow_ordinary_words():
    text = "status: Running ready: True port: 5432 image: nginx:1.25.3 time: 12:30:45 reason: OOMKilled\n"

    assert masker("all").mask(text) == text
