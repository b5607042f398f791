"""Who may decide an action: approvers by name or group, from the existing auth (API tokens' users and their
Django groups; a trusted proxy's user and X-Forwarded-Groups, and only from a trusted proxy)."""

from __future__ import annotations

import io
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from rest_framework.test import APIClient

from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]


def _config(tmp_path, mode: str, **system) -> None:
    write_config(tmp_path / "cfg", tarsy={"system": {"auth": {"mode": mode}, **system},
                                          "actions": {"enabled": True, "approvers": ["sre-oncall", "carol"]}})


def _approve(client: APIClient) -> int:
    """The answer to approving an action that does not exist: 404 for an approver, 403 for anyone else."""
    return client.post(f"/api/v1/actions/{uuid.uuid4()}/approve", {"comment": "ok"}, format="json").status_code


def _token(name: str) -> str:
    out = io.StringIO()
    call_command("create_api_token", name, stdout=out)
    return out.getvalue().strip()


def test_token_users_decide_by_name_or_django_group(tmp_path):
    _config(tmp_path, "token")
    tokens = {name: _token(name) for name in ("carol", "dave", "erin")}
    get_user_model().objects.get(username="erin").groups.add(Group.objects.create(name="sre-oncall"))
    codes = {name: _approve(APIClient(REMOTE_ADDR="10.0.0.8", HTTP_AUTHORIZATION=f"Token {token}"))
             for name, token in tokens.items()}
    assert codes == {"carol": 404, "dave": 403, "erin": 404}


def test_proxy_groups_count_only_from_a_trusted_proxy(tmp_path):
    _config(tmp_path, "proxy", trusted_proxies=["10.0.0.1/32"])
    headers = {"HTTP_X_FORWARDED_USER": "frank", "HTTP_X_FORWARDED_GROUPS": "dev, sre-oncall"}
    assert _approve(APIClient(REMOTE_ADDR="10.0.0.1", **headers)) == 404
    assert _approve(APIClient(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_USER="frank",
                              HTTP_X_FORWARDED_GROUPS="dev")) == 403
    assert _approve(APIClient(REMOTE_ADDR="10.9.9.9", **headers)) in (401, 403)  # not believed from elsewhere


@pytest.mark.parametrize("forged", [{"HTTP_X_FORWARDED_USER": "carol"}, {"HTTP_X_FORWARDED_EMAIL": "carol"},
                                    {"HTTP_X_FORWARDED_USER": "dave", "HTTP_X_FORWARDED_GROUPS": "sre-oncall"}])
def test_in_token_mode_proxy_headers_never_make_a_token_holder_an_approver(tmp_path, forged):
    """Token mode with `trusted_proxies` set (a load balancer in front): a token holder's own X-Forwarded-* headers,
    passed through from a trusted address, neither name nor group them."""
    _config(tmp_path, "token", trusted_proxies=["10.0.0.0/24"])
    token = _token("dave")
    client = APIClient(REMOTE_ADDR="10.0.0.5", HTTP_AUTHORIZATION=f"Token {token}", **forged)
    assert _approve(client) == 403
    created = client.post("/api/v1/alerts", {"alert_type": "kubernetes", "data": {"m": "x"}}, format="json")
    assert created.status_code in (200, 201, 202), created.content
    from tarsy.models import AlertSession
    assert AlertSession.objects.get(id=created.json()["session_id"]).author == "dave"


@pytest.mark.parametrize("mode", ["none", "token"])
def test_outside_proxy_mode_identity_headers_name_no_one_and_grant_nothing(tmp_path, mode):
    """Proxy headers are honoured only in `proxy` mode: a loopback client in mode none, or a token holder behind a
    trusted load balancer, sending X-Forwarded-User: alice and X-Forwarded-Groups: sre-oncall is not alice and is
    no approver."""
    from tarsy.config import DEFAULT_AUTHOR
    from tarsy.models import AlertSession

    write_config(tmp_path / "cfg", tarsy={
        "system": {"auth": {"mode": mode}, "trusted_proxies": ["127.0.0.1/32", "10.0.0.0/24"]},
        "actions": {"enabled": True, "approvers": ["sre-oncall", "alice"]}})
    forged = {"HTTP_X_FORWARDED_USER": "alice", "HTTP_X_FORWARDED_GROUPS": "sre-oncall"}
    if mode == "token":
        client, who = APIClient(REMOTE_ADDR="10.0.0.5", HTTP_AUTHORIZATION=f"Token {_token('dave')}", **forged), "dave"
    else:
        client, who = APIClient(REMOTE_ADDR="127.0.0.1", **forged), DEFAULT_AUTHOR
    assert _approve(client) == 403
    created = client.post("/api/v1/alerts", {"alert_type": "kubernetes", "data": {"m": "x"}}, format="json")
    assert created.status_code == 202, created.content
    assert AlertSession.objects.get(id=created.json()["session_id"]).author == who
