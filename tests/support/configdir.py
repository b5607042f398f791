"""Write a throwaway configuration directory (tarsy.yaml, llm-providers.yaml, scripts) for a test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from agents.config import load_config
from tarsy.config import set_config


def write_config(directory: Path, *, tarsy: dict[str, Any] | None = None,
                 providers: dict[str, Any] | None = None, activate: bool = True):
    """Write the YAML files; with `activate`, make them this process's configuration. Returns the config."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tarsy.yaml").write_text(yaml.safe_dump(tarsy or {}, sort_keys=False))
    (directory / "llm-providers.yaml").write_text(yaml.safe_dump({"llm_providers": providers or {}}, sort_keys=False))
    config = load_config(directory)
    if activate:
        set_config(config)
    return config


def scripted_provider(script: Any, latency_ms: int = 0, chunk_size: int = 0) -> dict[str, Any]:
    return {"type": "scripted", "script": script, "latency_ms": latency_ms, "chunk_size": chunk_size}


# `system` of a test whose people are named by an authenticating proxy on this machine: X-Forwarded-User and
# X-Forwarded-Groups from a loopback client (the test client) are believed, and a request without them is refused.
PROXY_ON_LOOPBACK = {"auth": {"mode": "proxy"}, "trusted_proxies": ["127.0.0.1/32"]}
