"""Data masking for MCP tool results and alert data (DESIGN §7).

Masking runs before anything reaches the LLM, the database or a browser. Text is
masked by the structural Kubernetes Secret masker first, then the selected regex
patterns in a fixed order (specific shapes before generic base64), then the
server's custom patterns. Structured alert data is walked instead (structured.py),
so values are masked as they are, not as JSON-escaped text.

Nothing fails open. A tool result that cannot be masked is withheld whole; alert
data that cannot be masked raises (MaskingError for input too deep to read, any
other error as itself) and the alert is refused: it is never stored unmasked.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from agents.config.schema import AlertMaskingConfig, CustomPattern, MaskingConfig

from .kubernetes_secrets import SECRET_DATA_MASK, MaskingError, mask_kubernetes_secrets
from .patterns import (
    BUILTIN_PATTERNS,
    KUBERNETES_SECRET,
    PATTERN_GROUPS,
    MaskPattern,
    Rule,
    known_groups,
    known_patterns,
)
from .structured import NESTED_VALUE_MASK, mask_structure

__all__ = [
    "DEFAULT_PATTERN_GROUPS",
    "MASKING_FAILED_PLACEHOLDER",
    "NESTED_VALUE_MASK",
    "PATTERN_GROUPS",
    "SECRET_DATA_MASK",
    "DataMasker",
    "MaskingError",
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
    # For structured data: (key regex, token) per selected pattern that masks values by their key name,
    # rules for bare mapping values, and the token for secret-named container env values.
    key_rules: tuple[tuple[re.Pattern[str], str], ...] = field(default=(), repr=False)
    value_rules: tuple[Rule, ...] = field(default=(), repr=False)
    env_token: str | None = None
    # Any trigger of any rule, lower-case; None when some rule has none (it must scan every text).
    screen: re.Pattern[str] | None = field(default=None, repr=False)

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
        return cls(
            secrets=KUBERNETES_SECRET in names,
            patterns=builtin + custom,
            key_rules=tuple((p.key, p.token) for p in builtin if p.key is not None),
            value_rules=tuple(p.value_rule for p in builtin if p.value_rule is not None),
            env_token=BUILTIN_PATTERNS["password"].token if "password" in names else None,
            screen=_screen(builtin + custom),
        )

    @property
    def active(self) -> bool:
        return self.secrets or bool(self.patterns)

    def mask(self, text: str) -> str:
        """Return `text` with every selected kind of secret replaced by its masking token.

        Raises MaskingError for a Kubernetes Secret nested or escaped too deeply to mask with confidence."""
        if not text:
            return text
        if self.secrets:
            text = mask_kubernetes_secrets(text)
        lowered = text.lower()
        if self.screen is not None and self.screen.search(lowered) is None:
            return text  # no rule's trigger: the common case for short values and keys, one scan instead of ~30
        for pattern in self.patterns:
            text = pattern.apply(text, lowered)
        return text

    def mask_value(self, text: str) -> str:
        """`text` as the whole value of a mapping entry: masked as text, then as a bare value."""
        text = self.mask(text)
        for rule in self.value_rules:
            if rule.regex.fullmatch(text):
                text = rule.apply(text)
        return text

    def mask_data(self, data: Any) -> Any:
        """Structured data (decoded JSON) in the same shape, masked; see structured.py."""
        return mask_structure(self, data) if self.active else data

    def key_token(self, key: str) -> str | None:
        """The token that masks a value stored under `key`, if the key names a secret."""
        tail = key[-100:]
        return next((token for regex, token in self.key_rules if regex.search(tail)), None)


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


def _screen(patterns: tuple[MaskPattern, ...]) -> re.Pattern[str] | None:
    """One regex finding any rule's trigger, so a text holding none skips every rule at once."""
    rules = [rule for pattern in patterns for rule in pattern.rules]
    if not rules or any(not rule.triggers for rule in rules):
        return None
    triggers = sorted({t for rule in rules for t in rule.triggers}, key=lambda t: (-len(t), t))
    return re.compile("|".join(map(re.escape, triggers)))


def _compile_custom(custom: CustomPattern) -> MaskPattern:
    return MaskPattern(custom.name, (Rule(re.compile(custom.pattern), custom.replacement, keep_prefix=False),))


def mask_tool_result(text: str, cfg: MaskingConfig) -> str:
    """Mask an MCP tool result; on any masking error withhold the result entirely (fail closed)."""
    try:
        return DataMasker.from_config(cfg).mask(text)
    except Exception:
        logger.exception("masking a tool result failed; the result is withheld")
        return MASKING_FAILED_PLACEHOLDER


@functools.cache
def _group_masker(group: str) -> DataMasker:
    """Per pattern group (a known name): skips building and serialising a MaskingConfig for every alert."""
    return DataMasker.from_config(MaskingConfig(pattern_groups=[group]))


def mask_alert_data(data: Any, cfg: AlertMaskingConfig) -> Any:
    """Mask alert data with its pattern group, in the shape it came: text stays text, decoded JSON stays decoded.

    Never returns data unmasked: input too deep to mask raises MaskingError (in structured data only that value
    is masked whole instead), and any other masking failure propagates, so the alert is refused."""
    if not cfg.enabled:
        return data
    masker = _group_masker(cfg.pattern_group)
    return masker.mask(data) if isinstance(data, str) else masker.mask_data(data)
