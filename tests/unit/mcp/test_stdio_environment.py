"""A stdio MCP server starts with an explicit environment: what programs need and what its configuration names,
never the TARSy process's own secrets."""

from __future__ import annotations

import json
import os

import pytest

from agents.mcp.client import STDIO_INHERITED_ENV
from agents.mcp.pool import MCPPool

from .conftest import stdio_config, unique_name

pytestmark = pytest.mark.timeout(60)

SECRETS = {"SECRET_KEY": "django-secret", "DATABASE_URL": "postgres://tarsy:pw@db:5432/tarsy",
           "REDIS_URL": "redis://redis:6379/0", "GOOGLE_API_KEY": "AIza-not-for-tools",
           "OPENAI_API_KEY": "sk-not-for-tools", "TARSY_SOMETHING_ELSE": "unlisted"}
NEEDED = {"KUBECONFIG": "/etc/kube/config", "TZ": "Europe/Prague", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
          "HTTPS_PROXY": "http://proxy.internal:3128"}


def test_a_stdio_server_gets_what_it_needs_and_its_config_env_but_no_secrets(shared_pool: MCPPool,
                                                                             monkeypatch) -> None:
    for key, value in {**SECRETS, **NEEDED}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    configured = {"AWS_PROFILE": "oncall", "GITHUB_TOKEN": "named-in-the-config"}
    passed_through = ["AWS_REGION", "AWS_SESSION_TOKEN"]  # the second is unset: it stays unset, no error
    cfg = stdio_config(transport={"env": configured, "env_passthrough": passed_through})

    env = json.loads(shared_pool.call_tool(unique_name("environ"), cfg, "environment", {}).text)

    assert not set(SECRETS) & set(env), sorted(set(SECRETS) & set(env))
    assert {k: env.get(k) for k in NEEDED} == NEEDED
    assert env["PATH"] == os.environ["PATH"] and env["HOME"] == os.environ["HOME"]
    assert {k: env.get(k) for k in configured} == configured  # a config may pass a secret on purpose
    assert env["AWS_REGION"] == "eu-west-1" and "AWS_SESSION_TOKEN" not in env
    named = set(configured) | set(passed_through)
    unexpected = {k for k in env if k not in STDIO_INHERITED_ENV and k not in named and not k.startswith("LC_")}
    assert not unexpected, sorted(unexpected)
