"""The process-wide configuration, loaded once from TARSY_CONFIG_DIR."""

from __future__ import annotations

import threading

from django.conf import settings

from agents.config import ConfigError, TarsyConfig, load_config
from agents.config.schema import AlertMaskingConfig
from agents.mcp.masking import boundary

_lock = threading.Lock()
_config: TarsyConfig | None = None


def get_config() -> TarsyConfig:
    """Raises ConfigError (every problem listed) when the files are invalid."""
    global _config
    if _config is None:
        with _lock:
            if _config is None:
                _config = load_config(settings.TARSY_CONFIG_DIR or None)
                boundary.configure(_config.defaults.alert_masking)
    return _config


def set_config(config: TarsyConfig | None) -> None:
    """Replace the active configuration (tests; None reloads from disk on next use)."""
    global _config
    with _lock:
        _config = config
        boundary.configure(config.defaults.alert_masking if config else AlertMaskingConfig())


__all__ = ["ConfigError", "get_config", "set_config"]
