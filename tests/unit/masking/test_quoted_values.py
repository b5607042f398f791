"""Class 4: quoted values are masked whole, spaces, commas and escaped quotes included."""

from __future__ import annotations

import json

import pytest

CASES = {
    "double quoted with spaces": ('password: "hunter2 with spaces"\n', 'password: "__MASKED_PASSWORD__"\n'),
    "single quoted with space": ("password: 'abc def'\n", "password: '__MASKED_PASSWORD__'\n"),
    "double quoted with comma": ('password: "a,b"\n', 'password: "__MASKED_PASSWORD__"\n'),
    "yaml doubled single quote": ("password: 'it''s a secret'\n", "password: '__MASKED_PASSWORD__'\n"),
    "escaped quote inside": ('password: "say \\"hi\\" twice"\n', 'password: "__MASKED_PASSWORD__"\n'),
    "env assignment": ('DB_PASSWORD="correct horse, battery staple" ./run\n',
                       'DB_PASSWORD="__MASKED_PASSWORD__" ./run\n'),
    "api key with spaces": ("api_key = 'k1 k2 k3'\n", "api_key = '__MASKED_API_KEY__'\n"),
    "client secret with comma": ('client_secret: "x, y"\n', 'client_secret: "__MASKED_SECRET_KEY__"\n'),
    "token with spaces": ('token: "abc def ghi"\n', 'token: "__MASKED_TOKEN__"\n'),
    "inline in a log line": ('ts=1 level=info password="p w" user=orders\n',
                             'ts=1 level=info password="__MASKED_PASSWORD__" user=orders\n'),
    "unterminated quote": ('password: "never closed and long\nnext: line\n',
                           'password: "__MASKED_PASSWORD__\nnext: line\n'),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_quoted_value_is_masked_whole(default_masker, case):
    text, expected = CASES[case]

    assert default_masker.mask(text) == expected


def test_json_value_with_spaces_and_commas_is_masked_whole(default_masker):
    text = json.dumps({"user": "orders", "password": "a b, c \"d\""}, indent=2)

    masked = default_masker.mask(text)

    assert json.loads(masked) == {"user": "orders", "password": "__MASKED_PASSWORD__"}
