"""The masking boundary: one way to mask outside text that is not a tool result.

Chat questions, error text from MCP servers and LLM providers, tool-call arguments,
runbook URLs and runbook content all reach the database, logs, the LLM or a browser.
Each passes through here on its way in, masked with the pattern group the active
configuration selects for alerts (`defaults.alert_masking`), so one setting decides
how all such text is treated. Tool results keep their per-server masking
(`mask_tool_result`). Masking that fails withholds the text: it never passes unmasked.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from agents.config.schema import AlertMaskingConfig, MaskingConfig

from . import DataMasker

__all__ = [
    "NUL_REPLACEMENT",
    "URL_CREDENTIAL_MASK",
    "WITHHELD",
    "configure",
    "mask_arguments",
    "mask_text",
    "mask_url",
    "without_nul",
]

logger = logging.getLogger(__name__)

WITHHELD = "[MASKING FAILED: text withheld]"
URL_CREDENTIAL_MASK = "__MASKED_URL_CREDENTIAL__"
# PostgreSQL refuses NUL in text and JSON columns; U+FFFD is what decoders put where a character is unusable.
NUL_REPLACEMENT = "\ufffd"
# Query (and fragment) parameters that carry credentials in links people paste: API tokens, OAuth tokens,
# S3 / GCS / Azure signed URLs. Matched case-insensitively, `-` read as `_`.
SENSITIVE_URL_PARAMS = frozenset({
    "token", "access_token", "refresh_token", "id_token", "auth", "auth_token", "private_token", "api_key",
    "apikey", "key", "sig", "signature", "secret", "client_secret", "password", "passwd", "pwd", "credential",
    "x_amz_signature", "x_amz_credential", "x_amz_security_token", "x_goog_signature", "x_goog_credential",
})
_SENSITIVE_SUFFIXES = ("_token", "_secret", "_password", "_signature", "_key")

_lock = threading.Lock()
_config = AlertMaskingConfig()  # until a configuration is active: the schema's default (the safe choice)
_masker: DataMasker | None = None


def configure(cfg: AlertMaskingConfig) -> None:
    """Mask with `cfg` from now on (called whenever the process's configuration changes)."""
    global _config, _masker
    with _lock:
        _config, _masker = cfg, None


def _current() -> DataMasker:
    global _masker
    with _lock:
        if _masker is None:
            cfg = _config
            groups = [cfg.pattern_group] if cfg.enabled else []
            _masker = DataMasker.from_config(MaskingConfig(enabled=cfg.enabled, pattern_groups=groups))
        return _masker


def without_nul(text: str) -> str:
    """`text` with NUL characters replaced, so it can be stored."""
    return text.replace("\x00", NUL_REPLACEMENT) if "\x00" in text else text


def mask_text(text: str) -> str:
    """Outside text as it may be stored, logged, shown or sent to the LLM; withheld if masking fails."""
    if not text:
        return text
    try:
        return without_nul(_current().mask(text))
    except Exception:  # noqa: BLE001 - any masker failure must withhold, never pass the text through
        logger.exception("masking outside text failed; the text is withheld")
        return WITHHELD


def mask_arguments(arguments: Any) -> Any:
    """Tool-call arguments for storage and display, same shape, every string masked in its key's context.

    The arguments are masked as the JSON text a reader sees, so `{"password": "..."}` is caught by the key; if
    masking leaves JSON that no longer decodes, the masked text itself is kept (never the raw values)."""
    if isinstance(arguments, str):
        return mask_text(arguments)
    if not isinstance(arguments, (dict, list)):
        return arguments
    encoded = json.dumps(_strip_nul(arguments), ensure_ascii=False)
    masked = mask_text(encoded)
    if masked == encoded:
        return _strip_nul(arguments)
    try:
        decoded = json.loads(masked)
    except ValueError:
        return masked
    return decoded if type(decoded) is type(arguments) else masked


def _strip_nul(value: Any) -> Any:
    if isinstance(value, str):
        return without_nul(value)
    if isinstance(value, dict):
        return {without_nul(str(k)): _strip_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_nul(v) for v in value]
    return value


def mask_url(url: str) -> str:
    """A URL with its user info and credential parameters replaced by URL_CREDENTIAL_MASK; the rest after the
    host is masked as text too (the host itself is kept whole: text patterns would take `x@host` for an e-mail)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return mask_text(url)
    netloc = parts.netloc
    if "@" in netloc:  # user:password@, or a token used as the user name (https://TOKEN@github.com)
        netloc = f"{URL_CREDENTIAL_MASK}@{netloc.rpartition('@')[2]}"
    rest = urlunsplit(("", "", parts.path, _mask_params(parts.query), _mask_params(parts.fragment)))
    return urlunsplit((parts.scheme, without_nul(netloc), "", "", "")) + mask_text(rest)


def _mask_params(text: str) -> str:
    if "=" not in text:
        return text
    pairs = []
    for pair in text.split("&"):
        name, sep, _value = pair.partition("=")
        if sep and _is_sensitive(name):
            pair = f"{name}={URL_CREDENTIAL_MASK}"
        pairs.append(pair)
    return "&".join(pairs)


def _is_sensitive(name: str) -> bool:
    key = unquote(name).strip().lower().replace("-", "_")
    return key in SENSITIVE_URL_PARAMS or key.endswith(_SENSITIVE_SUFFIXES)
