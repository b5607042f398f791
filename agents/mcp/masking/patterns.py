"""Built-in regex masking patterns and the named groups that select them.

Each pattern replaces only the sensitive value and keeps the key in front of it
(`password: __MASKED_PASSWORD__`), so readers still see *what kind* of thing was
removed. Generic shapes (base64 runs) carry a predicate that rejects ordinary
identifiers, paths and hex hashes, because masking those would blind the LLM.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

# Name of the structural Kubernetes Secret masker inside pattern groups (it is not a regex).
KUBERNETES_SECRET = "kubernetes_secret"

# A value that is already masked must not be masked again by a later, more generic pattern.
_NOT_MASKED = r"(?!__MASKED_|\[MASKED)"
# Key patterns start at the telling word (`token`, `password`), not at the key's start: a leading
# `[\w-]*` made every word a match attempt, and whatever precedes the match is kept anyway.
# Separator between a key and its value on one line; never a newline, so `secret:` that opens
# a YAML block does not swallow the next line's key.
_SEP = r"""["']?[ \t]*[:=][ \t]*["']?"""
_VALUE = r"""[^\s"',;&}]+"""


@dataclass(frozen=True)
class Rule:
    """One regex: group 1 (if any) is kept, the last group is replaced by `replacement`.

    With `keep_prefix=False` (custom patterns) it is a plain `re.sub`, so users' `\\1`
    back-references work as they expect.
    """

    regex: re.Pattern[str]
    replacement: str
    accept: Callable[[str], bool] | None = None
    keep_prefix: bool = True

    def apply(self, text: str) -> str:
        if not self.keep_prefix:
            return self.regex.sub(self.replacement, text)
        return self.regex.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        value = match.group(match.lastindex or 0)
        if self.accept is not None and not self.accept(value):
            return match.group(0)
        if match.lastindex and match.lastindex >= 2:
            return match.group(1) + self.replacement
        return self.replacement


@dataclass(frozen=True)
class MaskPattern:
    """A named pattern: one or more rules sharing a purpose."""

    name: str
    rules: tuple[Rule, ...] = field(default_factory=tuple)

    def apply(self, text: str) -> str:
        for rule in self.rules:
            text = rule.apply(text)
        return text


def _rule(pattern: str, replacement: str, accept: Callable[[str], bool] | None = None, flags: int = 0) -> Rule:
    return Rule(re.compile(pattern, flags), replacement, accept)


def _looks_like_secret_base64(value: str) -> bool:
    """Long base64 runs are secrets only if they mix cases and digits like encoded bytes do.

    Rejects camelCase identifiers (no digit), hex hashes and container ids (no upper case)
    and file paths such as `/var/run/secrets/kubernetes.io/...`.
    """
    core = value.rstrip("=")
    if value.startswith("/") and value.count("/") >= 2:
        return False
    return any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)


def _looks_like_short_base64(value: str) -> bool:
    """Short values after a colon: valid base64 length and either padding or mixed case + digit.

    `Running`, `True`, `5432`, `IfNotPresent` and hex like `7d9c8b6f` stay visible.
    """
    if not 4 <= len(value) <= 19 or len(value) % 4:
        return False
    if value.endswith("="):
        return True
    return _looks_like_secret_base64(value)


_B64_RUN = r"(?<![A-Za-z0-9+/=_.\-])([A-Za-z0-9+/]{20,}={0,2})(?![A-Za-z0-9+/=_.\-])"


def _kubeconfig_field(key: str, replacement: str) -> Rule:
    """`certificate-authority-data: <base64>` in YAML, or `"certificate-authority-data": "…"` in JSON."""
    return _rule(rf"(?i)((?:^|[\s{{,])[\"']?{key}{_SEP})([A-Za-z0-9+/]{{20,}}={{0,2}})", replacement)


# Canonical order: specific shapes first, generic base64 last, so the specific token wins.
BUILTIN_PATTERNS: dict[str, MaskPattern] = {
    p.name: p
    for p in (
        MaskPattern(
            "private_key",
            (
                _rule(
                    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
                    "__MASKED_PRIVATE_KEY__",
                    flags=re.S,
                ),
                _kubeconfig_field("client-key-data", "__MASKED_PRIVATE_KEY__"),
            ),
        ),
        MaskPattern(
            "certificate",
            (
                _rule(
                    r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----",
                    "__MASKED_CERTIFICATE__",
                    flags=re.S,
                ),
            ),
        ),
        # Kubeconfig embedded credentials: CA data, plus the client cert/key data that sit beside it
        # (a kubeconfig leaks as a whole; masking only the CA would leave the client key readable).
        MaskPattern(
            "certificate_authority_data",
            (
                _kubeconfig_field("certificate-authority-data", "__MASKED_CA_CERTIFICATE__"),
                _kubeconfig_field("client-certificate-data", "__MASKED_CERTIFICATE__"),
                _kubeconfig_field("client-key-data", "__MASKED_PRIVATE_KEY__"),
            ),
        ),
        MaskPattern(
            "ssh_key",
            (
                _rule(
                    r"\b(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d{3}|sk-ssh-ed25519@openssh\.com)"
                    r"[ \t]+[A-Za-z0-9+/]{20,}={0,2}(?:[ \t]+[^\s\"']+)?",
                    "__MASKED_SSH_KEY__",
                ),
            ),
        ),
        MaskPattern(
            "aws_access_key",
            (_rule(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b", "__MASKED_AWS_ACCESS_KEY__"),),
        ),
        MaskPattern(
            "aws_secret_key",
            (
                _rule(
                    rf"(?i)(aws[_\-.]?secret[_\-.]?(?:access[_\-.]?)?key{_SEP}){_NOT_MASKED}([A-Za-z0-9/+=]{{40}})",
                    "__MASKED_AWS_SECRET_KEY__",
                ),
            ),
        ),
        MaskPattern(
            "github_token",
            (
                _rule(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b", "__MASKED_GITHUB_TOKEN__"),
                _rule(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b", "__MASKED_GITHUB_TOKEN__"),
            ),
        ),
        MaskPattern(
            "slack_token",
            (
                _rule(r"\bxox[abposre]-[A-Za-z0-9-]{10,}", "__MASKED_SLACK_TOKEN__"),
                _rule(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+", "__MASKED_SLACK_TOKEN__"),
            ),
        ),
        MaskPattern(
            "token",
            (
                _rule(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", "__MASKED_TOKEN__"),
                _rule(rf"(?i)(\bbearer[ \t]+){_NOT_MASKED}([A-Za-z0-9_\-.~+/]{{20,}}=*)", "__MASKED_TOKEN__"),
                _rule(
                    rf"(?i)((?:token|jwt){_SEP}){_NOT_MASKED}([A-Za-z0-9_\-.~+/]{{20,}}=*)",
                    "__MASKED_TOKEN__",
                ),
            ),
        ),
        MaskPattern(
            "api_key",
            (
                _rule(
                    rf"(?i)(api[_\-]?key{_SEP}){_NOT_MASKED}([A-Za-z0-9_\-./+=]{{8,}})",
                    "__MASKED_API_KEY__",
                ),
            ),
        ),
        MaskPattern(
            "secret_key",
            (
                _rule(
                    rf"(?i)((?:secret[_\-]?key|client[_\-]?secret|secret[_\-]?access[_\-]?key){_SEP})"
                    rf"{_NOT_MASKED}({_VALUE})",
                    "__MASKED_SECRET_KEY__",
                ),
            ),
        ),
        MaskPattern(
            "password",
            (
                _rule(rf"(?i)((?:password|passwd|pwd){_SEP}){_NOT_MASKED}({_VALUE})", "__MASKED_PASSWORD__"),
                # Container env as `name: DB_PASSWORD` followed by `value: …` (pod specs in YAML).
                _rule(
                    r"(?im)(\bname:[ \t]*[\"']?[\w.\-]*(?:password|passwd|secret|token|api[_\-]?key)[\w.\-]*[\"']?"
                    rf"[ \t]*\r?\n[ \t]*value:[ \t]*[\"']?){_NOT_MASKED}({_VALUE})",
                    "__MASKED_PASSWORD__",
                ),
                # The same env entry in JSON: {"name": "DB_PASSWORD", "value": "…"}.
                _rule(
                    r"(?i)(\"name\"[ \t]*:[ \t]*\"[\w.\-]*(?:password|passwd|secret|token|api[_\-]?key)[\w.\-]*\""
                    rf"[ \t]*,\s*\"value\"[ \t]*:[ \t]*\"){_NOT_MASKED}([^\"]+)",
                    "__MASKED_PASSWORD__",
                ),
                # Credentials in URLs: scheme://user:password@host
                _rule(r"(\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:)(?!__MASKED_)([^\s@/]+)(?=@)", "__MASKED_PASSWORD__"),
            ),
        ),
        MaskPattern(
            "email",
            (_rule(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b", "__MASKED_EMAIL__"),),
        ),
        MaskPattern("base64_secret", (_rule(_B64_RUN, "__MASKED_BASE64_VALUE__", _looks_like_secret_base64),)),
        MaskPattern(
            "base64_short",
            (
                _rule(
                    r"(:[ \t]*[\"']?)([A-Za-z0-9+/]{2,19}={0,2})(?=[\"']?(?:[ \t]*[,}\r\n]|[ \t]*$))",
                    "__MASKED_BASE64_SHORT__",
                    _looks_like_short_base64,
                    flags=re.M,
                ),
            ),
        ),
    )
}

_BASIC = ["api_key", "password"]
_SECRETS = [*_BASIC, "token"]
PATTERN_GROUPS: dict[str, list[str]] = {
    "basic": _BASIC,
    "secrets": _SECRETS,
    "security": [*_SECRETS, "certificate", "certificate_authority_data", "email", "ssh_key"],
    "kubernetes": [KUBERNETES_SECRET, "api_key", "password", "certificate_authority_data"],
    "cloud": ["aws_access_key", "aws_secret_key", "github_token", "slack_token"],
    "all": [KUBERNETES_SECRET, *BUILTIN_PATTERNS],
}


def known_groups() -> list[str]:
    """Group names accepted in `pattern_groups` (for config validation)."""
    return sorted(PATTERN_GROUPS)


def known_patterns() -> list[str]:
    """Pattern names accepted in `patterns` (for config validation)."""
    return sorted([KUBERNETES_SECRET, *BUILTIN_PATTERNS])
