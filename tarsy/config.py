"""The process-wide configuration, loaded once from TARSY_CONFIG_DIR."""

from __future__ import annotations

import os
import threading

from django.conf import settings

from agents.config import ConfigError, TarsyConfig, load_config
from agents.config.schema import AlertMaskingConfig, PrivacyConfig
from agents.mcp.masking import boundary
from agents.privacy import policy as privacy

DEMO_FEATURES_ENV = "TARSY_DEMO_FEATURES"  # "1": `manage.py serve` runs the demo (set by it on the embedded default)
DEMO_CLUSTER_JOURNAL = "demo-cluster-changes.json"  # under TARSY_DATA_DIR: what approved actions changed
# Who a request naming no one is (auth mode none: a loopback client); here, not in tarsy.identity, which reads the
# configuration: the demo's approvers name it while the configuration is being built.
DEFAULT_AUTHOR = "api-client"

_lock = threading.Lock()
_config: TarsyConfig | None = None


def get_config() -> TarsyConfig:
    """Raises ConfigError (every problem listed) when the files are invalid."""
    global _config
    if _config is None:
        with _lock:
            if _config is None:
                _config = _with_demo(load_config(settings.TARSY_CONFIG_DIR or None))
                boundary.configure(_config.defaults.alert_masking)
                privacy.configure(_config.privacy)
    return _config


def _with_demo(config: TarsyConfig) -> TarsyConfig:
    """The demo's memory, actions and scoring on the embedded default as `manage.py serve` runs it
    (agents.config.demo); the local user (no login: api-client; logged in: admin) approves its actions."""
    if not (settings.EMBEDDED and os.environ.get(DEMO_FEATURES_ENV) == "1"):
        return config
    from agents.config.demo import with_demo_features

    approvers = [DEFAULT_AUTHOR, "admin"] if config.system.auth.mode == "none" else []
    return with_demo_features(config, state_file=str(settings.DATA_DIR / DEMO_CLUSTER_JOURNAL), approvers=approvers)


def set_config(config: TarsyConfig | None) -> None:
    """Replace the active configuration (tests; None reloads from disk on next use)."""
    global _config
    with _lock:
        _config = config
        boundary.configure(config.defaults.alert_masking if config else AlertMaskingConfig())
        privacy.configure(config.privacy if config else PrivacyConfig())


__all__ = ["ConfigError", "get_config", "set_config"]
