"""Class 3: credentials in the shapes they take in logs, manifests, command lines and URLs."""

from __future__ import annotations

import json

import pytest

SA_JWT = (
    "eyJhbGciOiJSUzI1NiIsImtpZCI6Ik1qQTNOV1UifQ"
    ".eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50Iiwic3ViIjoic3lzdGVtOnNhOnNob3A6d2ViIn0"
    ".Zm9vYmFyYmF6cXV4c2lnbmF0dXJlLXZhbHVlLWhlcmU"
)

# (text, the secret that must disappear, text that must stay)
CASES = {
    "private_key yaml": ('private_key: "0f9e8d7c6b5a"\n', "0f9e8d7c6b5a", "private_key: "),
    "bearer key": ("bearer: q8Zr2LxW\n", "q8Zr2LxW", "bearer: "),
    "authorization bearer": ("Authorization: Bearer abc.def-ghi\n", "abc.def-ghi", "Authorization: Bearer "),
    "authorization basic": ("Authorization: Basic dXNlcjpwYXNz\n", "dXNlcjpwYXNz", "Authorization: Basic "),
    "curl header": ("curl -H 'Authorization: Bearer s3cr3tT0k' https://api.shop.io/v1\n", "s3cr3tT0k",
                    "https://api.shop.io/v1"),
    "service account jwt": (f"mounted token {SA_JWT} expires soon\n", SA_JWT[:40], "expires soon"),
    "jwt in json": (json.dumps({"sa": "web", "jwt": SA_JWT}), SA_JWT[60:100], '"sa": "web"'),
    "token flag": ("kubectl get pods --token abc123 -n shop\n", "abc123", "-n shop"),
    "token flag equals": ("helm upgrade --token=xyz9 web ./chart\n", "xyz9", "web ./chart"),
    "password flag": ("mysql --user root --password pw1 orders\n", "pw1", "orders"),
    "db password flag": ("pg_dump --db-password 'two words' shop\n", "two words", "shop"),
    "aws access key id": ("using key AKIAIOSFODNN7EXAMPLE in us-east-1\n", "AKIAIOSFODNN7EXAMPLE", "us-east-1"),
    "aws secret env": ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
                       "wJalrXUtnFEMI/K7MDENG", "AWS_SECRET_ACCESS_KEY="),
    "aws secret short": ("AWS_SECRET_ACCESS_KEY=abc\n", "=abc", "AWS_SECRET_ACCESS_KEY="),
    "redis empty user": ("REDIS_URL=redis://:pw@h:6379/0\n", ":pw@", "@h:6379/0"),
    "slash in password": ("dsn postgres://u:pa/ss@h/orders\n", "pa/ss", "@h/orders"),
    "at in password": ("dsn postgres://u:p@ss@h/orders\n", "p@ss", "@h/orders"),
    "k8s env pass": ("        - name: DB_PASS\n          value: s3cr3t-v4lue\n", "s3cr3t-v4lue", "name: DB_PASS"),
    "k8s env token": ("- name: SLACK_BOT_TOKEN\n  value: \"xoxb-abc\"\n", "xoxb-abc", "SLACK_BOT_TOKEN"),
    "k8s env key": ("- name: SIGNING_KEY\n  value: k3y-material\n", "k3y-material", "SIGNING_KEY"),
    "k8s env secret crlf": ("- name: OAUTH_SECRET\r\n  value: 0auth-s3cret\r\n", "0auth-s3cret", "OAUTH_SECRET"),
    "k8s env json": (json.dumps({"env": [{"name": "REDIS_PASS", "value": "r3d1s"}]}), "r3d1s", "REDIS_PASS"),
    "curl user": ("curl -u admin:s3cr3tC https://api.shop.io\n", "s3cr3tC", "-u admin:"),
    "cookie header": ("Cookie: session=9f8e7d6c5b\n", "9f8e7d6c5b", "Cookie: "),
    "block scalar": ("db:\n  password: |\n    first line\n    second line\n  host: orders-db\n",
                     "second line", "  host: orders-db\n"),
    "plain scalar below key": ("auth:\n  token:\n    c2VjcmV0LXRva2Vu\n  user: ci\n", "c2VjcmV0LXRva2Vu", "user: ci"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_credential_shape_is_masked_by_every_default_group(default_masker, case):
    text, secret, kept = CASES[case]

    masked = default_masker.mask(text)

    assert secret not in masked, masked
    assert kept in masked, masked


def test_service_account_token_file_content_is_masked(default_masker):
    masked = default_masker.mask(SA_JWT)

    assert masked == "__MASKED_TOKEN__"


def test_url_host_and_path_stay_readable(default_masker):
    masked = default_masker.mask("connecting to postgres://orders:p@ss@orders-db.shop.svc:5432/orders?sslmode=require")

    assert masked == "connecting to postgres://orders:__MASKED_PASSWORD__@orders-db.shop.svc:5432/orders?sslmode=require"


def test_a_mapping_below_a_secret_named_key_is_structure_and_stays(default_masker):
    text = "env:\n  password:\n    secretKeyRef:\n      name: db\n      key: password\n"

    assert default_masker.mask(text) == text


def test_uid_gid_after_u_is_not_a_password(default_masker):
    text = "docker run -u 1000:1000 web\n"

    assert default_masker.mask(text) == text
