"""Masking of structured data (decoded JSON: dicts, lists, scalars), as alerts arrive.

Walking the structure sees each value as it is, never as JSON-escaped text, so a
quote inside a value cannot hide a secret from a pattern. A value whose key names a
secret (`password`, `client_secret`, `DB_PASS`, `private_key`, `Authorization`…) is
masked whole, numbers included; a Kubernetes Secret's data and a container env entry
named like a secret are masked by structure; every other string is masked as text.
Nesting deeper than MAX_DEPTH is masked whole instead of followed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .kubernetes_secrets import MAX_NESTING, SECRET_DATA_MASK, MaskingError
from .patterns import ENV_SECRET_NAME

if TYPE_CHECKING:
    from . import DataMasker

MAX_DEPTH = MAX_NESTING
NESTED_VALUE_MASK = "__MASKED_NESTED_VALUE__"
_SCALARS = (str, int, float)


def mask_structure(masker: DataMasker, value: Any, depth: int = 0) -> Any:
    """`value` with the same shape and every secret in it masked."""
    if isinstance(value, str):
        return _mask_string(masker, value)
    if not isinstance(value, (dict, list)):
        return value
    if depth >= MAX_DEPTH:
        return NESTED_VALUE_MASK
    if isinstance(value, list):
        return [mask_structure(masker, item, depth + 1) for item in value]
    return _mask_mapping(masker, value, depth)


def _mask_mapping(masker: DataMasker, mapping: dict, depth: int) -> dict:
    secret_object = masker.secrets and mapping.get("kind") == "Secret"
    env_token = masker.env_token if _is_secret_env(mapping) else None
    result: dict[str, Any] = {}
    for key, item in mapping.items():
        name = str(key)
        token = masker.key_token(name)
        if secret_object and name in ("data", "stringData") and isinstance(item, dict):
            masked: Any = dict.fromkeys(item, SECRET_DATA_MASK)
        elif env_token and name == "value" and _is_scalar(item):
            masked = env_token
        elif token and _is_scalar(item):
            masked = token
        elif token and isinstance(item, list) and all(_is_scalar(v) for v in item):
            masked = [token for _ in item]
        else:
            masked = mask_structure(masker, item, depth + 1)
        result[_unique(result, _mask_string(masker, name, value=False))] = masked
    return result


def _mask_string(masker: DataMasker, text: str, value: bool = True) -> str:
    """A string value (masked as text and as a bare value) or a key (as text only)."""
    try:
        return masker.mask_value(text) if value else masker.mask(text)
    except MaskingError:
        return NESTED_VALUE_MASK


def _is_scalar(value: Any) -> bool:
    return isinstance(value, _SCALARS) and not isinstance(value, bool) and value != ""


def _is_secret_env(mapping: dict) -> bool:
    """`{"name": "DB_PASS", "value": "…"}`: a container env entry whose name says it holds a secret."""
    name = mapping.get("name")
    return "value" in mapping and isinstance(name, str) and bool(ENV_SECRET_NAME.search(name[-100:]))


def _unique(result: dict[str, Any], key: str) -> str:
    """Two keys that mask to the same text (two e-mail addresses) must not overwrite each other."""
    if key not in result:
        return key
    n = 2
    while f"{key}#{n}" in result:
        n += 1
    return f"{key}#{n}"
