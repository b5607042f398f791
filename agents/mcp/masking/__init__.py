"""Data masking for MCP tool results and alert data (DESIGN §7).

Masking runs before anything reaches the LLM, the database or a browser. The
structural Kubernetes Secret masker runs first, then the selected regex
patterns in a fixed order (specific shapes before generic base64), then the
server's custom patterns. Tool results fail closed — a masking error withholds
the whole result; alert data fails open — the alert must still be investigated.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass

from agents.config.schema import AlertMaskingConfig, CustomPattern, MaskingConfig

from .kubernetes_secrets import SECRET_DATA_MASK, mask_kubernetes_secrets
from .patterns import (
    BUILTIN_PATTERNS,
    KUBERNETES_SECRET,
    PATTERN_GROUPS,
    MaskPattern,
    Rule,
    known_groups,
    known_patterns,
)

__all__ = [
    "DEFAULT_PATTERN_GROUPS",
    "MASKING_FAILED_PLACEHOLDER",
    "PATTERN_GROUPS",
    "SECRET_DATA_MASK",
    "DataMasker",
    "known_groups",
    "known_patterns",
    "mask_alert_data",
    "mask_tool_result",
]

logger = logging.getLogger(__name__)

MASKING_FAILED_PLACEHOLDER = "[MASKING FAILED: tool result withheld]"
# Masking enabled with nothing selected still protects Secrets and obvious credentials:
# an empty selection is far more often an omission than a wish to mask nothing.
DEFAULT_PATTERN_GROUPS = ["kubernetes", "secrets"]
_CACHE_LIMIT = 128  # distinct masking configs per process; configs are few, this only bounds misuse


@dataclass(frozen=True)
class DataMasker:
    """A compiled masking configuration; build it with `from_config` (cached per config)."""

    secrets: bool
    patterns: tuple[MaskPattern, ...]

    @classmethod
    def from_config(cls, cfg: MaskingConfig) -> DataMasker:
        """Compile once per distinct config; raises ValueError for unknown group or pattern names."""
        key = cfg.model_dump_json()
        with _cache_lock:
            cached = _cache.get(key)
        if cached is not None:
            return cached
        masker = cls._build(cfg)
        with _cache_lock:
            if len(_cache) >= _CACHE_LIMIT:
                _cache.clear()
            _cache[key] = masker
        return masker

    @classmethod
    def _build(cls, cfg: MaskingConfig) -> DataMasker:
        if not cfg.enabled:
            return cls(secrets=False, patterns=())
        names = _selected_names(cfg)
        builtin = tuple(p for name, p in BUILTIN_PATTERNS.items() if name in names)
        custom = tuple(_compile_custom(p) for p in cfg.custom_patterns)
        return cls(secrets=KUBERNETES_SECRET in names, patterns=builtin + custom)

    @property
    def active(self) -> bool:
        return self.secrets or bool(self.patterns)

    def mask(self, text: str) -> str:
        """Return `text` with every selected kind of secret replaced by its masking token."""
        if not text:
            return text
        if self.secrets:
            text = mask_kubernetes_secrets(text)
        for pattern in self.patterns:
            text = pattern.apply(text)
        return text


_cache: dict[str, DataMasker] = {}
_cache_lock = threading.Lock()


def _selected_names(cfg: MaskingConfig) -> set[str]:
    groups = cfg.pattern_groups
    if not groups and not cfg.patterns and not cfg.custom_patterns:
        groups = DEFAULT_PATTERN_GROUPS
    unknown_groups = [g for g in groups if g not in PATTERN_GROUPS]
    unknown_patterns = [p for p in cfg.patterns if p not in known_patterns()]
    if unknown_groups or unknown_patterns:
        raise ValueError(
            f"unknown masking groups {unknown_groups} or patterns {unknown_patterns}; "
            f"known groups: {known_groups()}, known patterns: {known_patterns()}"
        )
    names = set(cfg.patterns)
    for group in groups:
        names.update(PATTERN_GROUPS[group])
    return names


def _compile_custom(custom: CustomPattern) -> MaskPattern:
    return MaskPattern(custom.name, (Rule(re.compile(custom.pattern), custom.replacement, keep_prefix=False),))


def mask_tool_result(text: str, cfg: MaskingConfig) -> str:
    """Mask an MCP tool result; on any masking error withhold the result entirely (fail closed)."""
    try:
        return DataMasker.from_config(cfg).mask(text)
    except Exception:
        logger.exception("masking a tool result failed; the result is withheld")
        return MASKING_FAILED_PLACEHOLDER


def mask_alert_data(text: str, cfg: AlertMaskingConfig) -> str:
    """Mask alert data with one pattern group; on a masker error keep the alert as is (fail open)."""
    if not cfg.enabled:
        return text
    try:
        return DataMasker.from_config(MaskingConfig(pattern_groups=[cfg.pattern_group])).mask(text)
    except Exception:
        logger.exception("masking alert data failed; the alert is used unmasked")
        return text
