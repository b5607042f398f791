"""Configuration: schema, loader, built-ins, registry."""

from .loader import ConfigError, load_config
from .registry import TarsyConfig

__all__ = ["ConfigError", "TarsyConfig", "load_config"]
