"""Servers no chain uses are neither started nor checked; a server that fails to start is reported with the
reason it gave, and its stderr stays out of TARSy's console."""

from __future__ import annotations

import sys

import pytest

from agents.mcp.health import UNUSED_NOTE, check_servers, clear_cache, known_problems
from agents.mcp.pool import MCPPool

from .conftest import stdio_config, tarsy_config

pytestmark = pytest.mark.timeout(60)

# What kubernetes-mcp-server prints without a cluster configuration, then exits.
NO_CLUSTER = ("import sys; print('Usage:\\n  kubernetes-mcp-server [flags]', file=sys.stderr); "
              "print('Error: invalid configuration: no configuration has been provided, try setting "
              "KUBERNETES_MASTER environment variable', file=sys.stderr); sys.exit(1)")


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_cache()
    yield
    clear_cache()


def test_a_server_no_chain_uses_is_reported_unused_and_never_started(pool: MCPPool, tmp_path) -> None:
    marker = tmp_path / "started"
    spy = stdio_config(transport={"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]})
    config = tarsy_config({"tools": stdio_config(), "kubernetes-server": spy}, used=["tools"])

    report = {r["name"]: r for r in check_servers(config, pool)}
    problems = known_problems(config, pool)

    assert report["tools"]["status"] == "ok"
    assert (report["kubernetes-server"]["status"], report["kubernetes-server"]["error"]) == ("unused", UNUSED_NOTE)
    assert problems == []
    assert not marker.exists()


def test_a_server_that_cannot_start_says_why_without_filling_the_console(pool: MCPPool, capfd, monkeypatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    config = tarsy_config({"kubernetes-server": stdio_config(transport={"command": sys.executable,
                                                                       "args": ["-c", NO_CLUSTER]})})

    (report,) = check_servers(config, pool)

    assert report["status"] == "error"
    assert "KUBECONFIG is not set" in report["error"]
    assert "try setting KUBERNETES_MASTER" in report["error"]
    assert known_problems(config, pool) == [f"MCP server 'kubernetes-server': {report['error']}"]
    out, err = capfd.readouterr()
    assert "Usage:" not in out + err
