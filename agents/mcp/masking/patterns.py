"""Built-in masking patterns and the named groups that select them.

Each pattern replaces only the sensitive value and keeps the key in front of it
(`password: __MASKED_PASSWORD__`), so readers still see *what kind* of thing was
removed. Generic shapes (base64 runs) carry a predicate that rejects ordinary
identifiers, paths and hex hashes, because masking those would blind the LLM.

Values are read the way they are written: `"…"`, `'…'` and `\\"…\\"` (a quoted value
inside a JSON string, at any escape depth) are masked whole, spaces and commas
included; unquoted values end at whitespace or a delimiter.

Every built-in pattern runs in time linear in its input. Python's `re` backtracks,
so each regex either starts at a literal, or is pinned to the start of a character
run by a lookbehind, and its repetitions are bounded or possessive (`++`, `*+`):
no position is scanned more than a bounded number of times. Custom patterns from
configuration are compiled with Python `re` as written and carry no such guarantee.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

# Name of the structural Kubernetes Secret masker inside pattern groups (it is not a regex).
KUBERNETES_SECRET = "kubernetes_secret"
MASK_PREFIXES = ("__MASKED_", "[MASKED")

# A key's closing quote (plain or escaped inside a JSON string), then `:` or `=` on the same line.
_CLOSE_Q = r"""(?:\\*+["'])?"""
_SEP = rf"{_CLOSE_Q}[ \t]*+[:=][ \t]*+"
# A value: escaped-quoted (inside a JSON string), double-quoted, single-quoted (YAML doubles `'`), or bare.
# Groups v1..v4 hold the value without its quotes; quotes stay, so JSON and YAML stay well-formed.
_VALUE = (
    r"""(?:\\++"(?P<v1>(?:[^"\\\r\n]++|\\++(?!"))*+)"""
    r"""|"(?P<v2>(?:[^"\\\r\n]++|\\.)*+)"""
    r"""|'(?P<v3>(?:[^'\r\n]++|'')*+)"""
    r"""|(?![|>][-+0-9]{0,2}[ \t]*+(?:#[^\r\n]*+)?(?:\r?\n|\Z))"""  # a YAML block scalar: see _keyed_block
    r"""(?P<v4>(?:[^\s"'\\,;&{}\[\]]++|\\++(?!"))++))"""
)
# Key words, each matched where the key ends (right before its separator), case-insensitively: (word regex
# starting with a letter, whether the word must not follow a letter: `DB_PASS` is a password key, `bypass` not).
Words = tuple[tuple[str, bool], ...]
_PASSWORD_WORDS: Words = (("password", False), ("passwd", False), ("passphrase", False), ("pass", True), ("pwd", True))
_TOKEN_WORDS: Words = (("token", False), ("jwt", True), ("bearer", True), ("auth", True), ("cookie", True))
_API_KEY_WORDS: Words = ((r"api[_\-.]?key", False),)
_SECRET_WORDS: Words = ((r"secret(?:[_\-.]?(?:access[_\-.]?)?key)?", False), (r"credentials?", False))
_PRIVATE_KEY_WORDS: Words = ((r"private[_\-.]?key", False), ("privkey", False))
_AWS_SECRET_WORDS: Words = ((r"aws[_\-.]?secret[_\-.]?(?:access[_\-.]?)?key", False),)
# Environment entries (`name: DB_PASS` + `value: …`) whose name ends in one of these words.
_ENV_NAME_WORDS = r"pass(?:word|wd|phrase)?|pwd|secret|token|key|credentials?"
ENV_SECRET_NAME = re.compile(rf"(?i)(?:{_ENV_NAME_WORDS})$")


def _in_text(words: Words) -> str:
    """The words as a regex that starts with a character class (`[PpTt](?:…)`, case folded per word after it),
    so Python's `re` skips to candidate positions in C instead of trying a match at every position: 3-8x
    faster on a megabyte than `(?i)(?:password|…)`, which has no usable prefix."""
    firsts = "".join(sorted({c for word, _ in words for c in (word[0].lower(), word[0].upper())}))
    alternatives = [
        (r"(?<![A-Za-z].)" if guarded else "") + f"(?<=[{word[0].lower()}{word[0].upper()}])(?i:{word[1:]})"
        for word, guarded in words
    ]
    return f"[{firsts}](?:{'|'.join(alternatives)})"


def _at_end(*vocabularies: Words) -> re.Pattern[str]:
    """Matches structured-data keys that end in one of the words (`db_password`, `clientSecret`, `DB_PASS`)."""
    alternatives = [f"(?<![a-z]){word}" if guarded else word for words in vocabularies for word, guarded in words]
    return re.compile(rf"(?i)(?:{'|'.join(alternatives)})$")


@dataclass(frozen=True)
class Rule:
    """One regex. Named groups `v…` hold the value: the first that took part is replaced and the rest of the
    match is kept; without such groups the whole match is replaced. `replacement` is a token, or a function
    of the value. With `keep_prefix=False` (custom patterns) it is a plain `re.sub`, so users' `\\1`
    back-references work as they expect."""

    regex: re.Pattern[str]
    replacement: str | Callable[[str], str]
    accept: Callable[[str], bool] | None = None
    keep_prefix: bool = True
    # Lower-case literals one of which every match contains: a text without any is not scanned at all.
    triggers: tuple[str, ...] = ()
    _value_groups: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        groups = tuple(sorted(i for name, i in self.regex.groupindex.items() if name.startswith("v")))
        object.__setattr__(self, "_value_groups", groups)

    def apply(self, text: str) -> str:
        if not self.keep_prefix:
            return self.regex.sub(self.replacement, text)
        return self.regex.sub(self._replace, text)

    def _replace(self, match: re.Match[str]) -> str:
        group = 0
        for candidate in self._value_groups:
            if match.start(candidate) != -1:
                group = candidate
                break
        start, end = match.span(group)
        text = match.string
        if start == end or text.startswith(MASK_PREFIXES, start) or (
            self.accept is not None and not self.accept(text[start:end])
        ):
            return match.group(0)
        token = self.replacement if isinstance(self.replacement, str) else self.replacement(text[start:end])
        return text[match.start(): start] + token + text[end: match.end()]


class UrlCredentialRule:
    """`scheme://user:password@host` → the password masked, wherever it sits in text.

    Procedural rather than one regex: the password may hold `/` and `@` (`postgres://u:p@ss@h`), so it runs to
    the last `@` before the URL ends, and a regex doing that backtracks over every `://` it starts from.
    """

    # A scheme, from the start of its run (the lookbehind sits after the first letter so that `re` can skip
    # to letters in C), then `://`.
    _SCHEME = re.compile(r"[A-Za-z](?<![A-Za-z0-9+.\-].)[A-Za-z0-9+.\-]{0,30}+://")
    _URL_END = re.compile(r"""[\s"'<>`\\]""")
    _HOST = re.compile(r"[A-Za-z0-9.\-_\[\]:%]++(?:[/?#\s\"'<>`\\]|$)")
    _PORT = re.compile(r"\d{1,5}(?:/|$)")
    MAX_LENGTH = 1024
    triggers = ("://",)

    def __init__(self, replacement: str):
        self.replacement = replacement

    def apply(self, text: str) -> str:
        out: list[str] = []
        pos = 0  # text before pos is written out
        search = 0
        url_end = -1  # end of the URL-like run the current `://` sits in (found once per run)
        next_at = -1  # the first `@` at or after the current `://` in that run (found once per `@`)
        while (scheme := self._SCHEME.search(text, search)) is not None:
            start = search = scheme.end()
            if url_end < start:
                found = self._URL_END.search(text, start)
                url_end = found.start() if found else len(text)
            if next_at < start:
                next_at = text.find("@", start, url_end)
                next_at = url_end if next_at == -1 else next_at
            end = min(url_end, start + self.MAX_LENGTH)
            if next_at >= end:  # no `@` in reach: skip every `://` that cannot reach one either
                search = max(search, next_at - self.MAX_LENGTH - 3) if next_at < url_end else url_end
                continue
            at = text.rfind("@", start, end)
            colon = text.find(":", start, at)
            if colon == -1 or "/" in text[start:colon]:
                continue
            password = text[colon + 1: at]
            if not password or password.startswith(MASK_PREFIXES) or self._PORT.match(password):
                continue
            if not self._HOST.match(text, at + 1):
                continue
            out.append(text[pos: colon + 1])
            out.append(self.replacement)
            pos = search = at
        if not out:
            return text
        out.append(text[pos:])
        return "".join(out)


TextRule = Rule | UrlCredentialRule


@dataclass(frozen=True)
class MaskPattern:
    """A named pattern: rules for text, plus (optionally) what it masks in structured data: values whose key
    names its kind of secret (`key`, replaced by `token`) and bare mapping values of its shape (`value_rule`)."""

    name: str
    rules: tuple[TextRule, ...] = field(default_factory=tuple)
    key: re.Pattern[str] | None = None
    token: str = ""
    value_rule: Rule | None = None

    def apply(self, text: str, lowered: str | None = None) -> str:
        """Apply every rule; `lowered` (the original text, lower-cased) lets rules whose triggers are absent
        skip their scan. Masking only replaces values, so it never creates a trigger a rule could then match."""
        for rule in self.rules:
            if lowered is None or not rule.triggers or any(t in lowered for t in rule.triggers):
                text = rule.apply(text)
        return text


def _rule(pattern: str, replacement: str | Callable[[str], str], accept: Callable[[str], bool] | None = None,
          triggers: tuple[str, ...] = ()) -> Rule:
    return Rule(re.compile(pattern), replacement, accept, triggers=triggers)


def _keyed(words: Words, token: str, triggers: tuple[str, ...]) -> Rule:
    """`key: value`, `key=value`, `"key": "value"`, `\\"key\\": \\"value\\"` for keys ending in `words`."""
    return _rule(rf"{_in_text(words)}{_SEP}{_VALUE}", token, triggers=triggers)


def _block_token(token: str) -> Callable[[str], str]:
    """The token for a multi-line value: one line, at the value's indentation, keeping its line break."""

    def replace(block: str) -> str:
        first = next((line for line in block.splitlines() if line.strip()), "")
        return first[: len(first) - len(first.lstrip(" \t"))] + token + ("\n" if block.endswith("\n") else "")

    return replace


def _keyed_block(words: Words, token: str, triggers: tuple[str, ...]) -> Rule:
    """A YAML key ending in `words` whose value sits on the more-indented lines below it: a block scalar
    (`password: |`) or a plain scalar continued there. A nested mapping below the key (`password:` then
    `  secretKeyRef: …`) is structure, not a value, and stays."""
    return _rule(
        rf"(?m)^(?P<ind>[ \t]*+)(?:-[ \t]++)?(?:[^\s:#\-][^\r\n:]*?)?{_in_text(words)}{_CLOSE_Q}[ \t]*+:"
        rf"(?:[ \t]*+[|>][-+0-9]{{0,2}}|(?=[ \t]*+\r?\n(?P=ind)[ \t]++(?![^\r\n]*?:(?:[ \t]|\r?$))))"
        rf"[ \t]*+(?:#[^\r\n]*+)?\r?\n"
        rf"(?P<v>(?:[ \t]*+\r?\n|(?P=ind)[ \t]++[^\r\n]++(?:\r?\n|\Z))*+)",
        _block_token(token),
        triggers=triggers,
    )


def _flag(keys: str, token: str, triggers: tuple[str, ...]) -> Rule:
    """Command-line flags: `--token xxx`, `--token=xxx`, `--db-password 'x y'`, any value length."""
    return _rule(
        rf"--(?<![\w-]--)(?:[A-Za-z0-9]++[-_]){{0,4}}+(?i:{keys})(?:[ \t]*+=[ \t]*+|[ \t]++)(?!-){_VALUE}", token,
        triggers=triggers,
    )


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


def _pem_token(block: str) -> str:
    """The token for a PEM block by its label; a block cut off before its END keeps its trailing whitespace."""
    label = block[len("-----BEGIN "): block.index("-----", len("-----BEGIN "))]
    token = (
        "__MASKED_PRIVATE_KEY__" if "PRIVATE" in label
        else "__MASKED_CERTIFICATE__" if "CERTIFICATE" in label
        else "__MASKED_PEM_BLOCK__"
    )
    if "-----END " in block:
        return token
    return token + block[len(block.rstrip()):]


# Any PEM block, whatever its label; the body may use real or `\n`-escaped line breaks. Without an END the
# block is masked as far as PEM-body characters go (to the end of the value it sits in).
_PEM = _rule(
    r"(?P<v>-----BEGIN [A-Z0-9]++(?: [A-Z0-9]++)*+-----"
    r"(?:[A-Za-z0-9+/=:,.\s]++|\\++[nrt/]|-(?!----))*+"
    r"(?:-----END [A-Z0-9]++(?: [A-Z0-9]++)*+-----)?)",
    _pem_token,
    triggers=("-----begin",),
)
_B64_RUN = r"(?<![A-Za-z0-9+/=_.\-])(?P<v>[A-Za-z0-9+/]{20,}+={0,2}+)(?![A-Za-z0-9+/=_.\-])"
# Short base64: a whole number of 4-character groups (4 to 16 characters, padding included).
_SHORT_B64 = r"(?:[A-Za-z0-9+/]{4}){0,3}(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)"


def _kubeconfig_field(key: str, replacement: str) -> Rule:
    """`certificate-authority-data: <base64>` in YAML, or `"certificate-authority-data": "…"` in JSON; the key in any
    case (`Certificate-Authority-Data:` in a hand-written or re-serialised kubeconfig is the same field)."""
    return _rule(
        # The first letter as a class keeps the C-level skip to candidates that `(?i:…)` alone would lose.
        rf"[{key[0].upper()}{key[0]}](?<![\w-].)(?i:{key[1:]}){_SEP}(?:\\*+[\"'])?(?P<v>[A-Za-z0-9+/]{{20,}}+={{0,2}}+)",
        replacement, triggers=(key,),
    )


# Canonical order: specific shapes first, generic base64 last, so the specific token wins.
BUILTIN_PATTERNS: dict[str, MaskPattern] = {
    p.name: p
    for p in (
        MaskPattern(
            "private_key",
            (
                _PEM,
                _kubeconfig_field("client-key-data", "__MASKED_PRIVATE_KEY__"),
                _keyed(_PRIVATE_KEY_WORDS, "__MASKED_PRIVATE_KEY__", ("private", "privkey")),
                _keyed_block(_PRIVATE_KEY_WORDS, "__MASKED_PRIVATE_KEY__", ("private", "privkey")),
            ),
            key=_at_end(_PRIVATE_KEY_WORDS),
            token="__MASKED_PRIVATE_KEY__",
        ),
        MaskPattern("certificate", (_PEM,)),
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
                    r"(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d{3}|sk-ssh-ed25519@openssh\.com)"
                    r"[ \t]++[A-Za-z0-9+/]{20,}+={0,2}+(?:[ \t]++[^\s\"'\\]++)?",
                    "__MASKED_SSH_KEY__",
                    triggers=("ssh-", "ecdsa-"),
                ),
            ),
        ),
        MaskPattern(
            "aws_access_key",
            (
                _rule(
                    r"A(?<!\wA)(?:KIA|SIA|GPA|IDA|ROA|NPA|NVA|IPA)[A-Z0-9]{16}\b", "__MASKED_AWS_ACCESS_KEY__",
                    triggers=("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa"),
                ),
            ),
        ),
        MaskPattern(
            "aws_secret_key",
            (
                _rule(
                    rf"{_in_text(_AWS_SECRET_WORDS)}{_SEP}(?:\\*+[\"'])?"
                    r"(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
                    "__MASKED_AWS_SECRET_KEY__",
                    triggers=("aws",),
                ),
            ),
        ),
        MaskPattern(
            "github_token",
            (
                _rule(r"gh(?<!\wgh)[pousr]_[A-Za-z0-9]{36,255}\b", "__MASKED_GITHUB_TOKEN__", triggers=("gh",)),
                _rule(
                    r"github_pat_(?<!\wgithub_pat_)[A-Za-z0-9_]{22,255}\b", "__MASKED_GITHUB_TOKEN__",
                    triggers=("github_pat_",),
                ),
            ),
        ),
        MaskPattern(
            "slack_token",
            (
                _rule(r"xox(?<!\wxox)[abposre]-[A-Za-z0-9-]{10,}+", "__MASKED_SLACK_TOKEN__", triggers=("xox",)),
                _rule(
                    r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]++", "__MASKED_SLACK_TOKEN__",
                    triggers=("hooks.slack.com",),
                ),
            ),
        ),
        MaskPattern(
            "token",
            (
                # JWTs (service-account tokens among them): header and payload are base64url JSON, so `eyJ`.
                _rule(
                    r"eyJ(?<!\weyJ)[A-Za-z0-9_\-]{8,}+\.eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]*+", "__MASKED_TOKEN__",
                    triggers=("eyj",),
                ),
                # The credential of an Authorization header, whatever its scheme and length.
                _rule(
                    rf"{_in_text((('proxy-authorization', True), ('authorization', True)))}{_SEP}"
                    rf"(?:(?i:bearer|basic|token|digest|negotiate|apikey)[ \t]++)?{_VALUE}",
                    "__MASKED_TOKEN__",
                    triggers=("authorization",),
                ),
                _rule(
                    rf"{_in_text((('bearer', True),))}[ \t]++(?P<v>[A-Za-z0-9_\-.~+/]{{20,}}+=*+)", "__MASKED_TOKEN__",
                    triggers=("bearer",),
                ),
                _keyed(_TOKEN_WORDS, "__MASKED_TOKEN__", ("token", "jwt", "bearer", "auth", "cookie")),
                _keyed_block(_TOKEN_WORDS, "__MASKED_TOKEN__", ("token", "jwt", "bearer", "auth", "cookie")),
                _flag(r"token|bearer|jwt", "__MASKED_TOKEN__", ("token", "jwt", "bearer")),
            ),
            key=_at_end(_TOKEN_WORDS, (("authorization", False),)),
            token="__MASKED_TOKEN__",
        ),
        MaskPattern(
            "api_key",
            (
                _keyed(_API_KEY_WORDS, "__MASKED_API_KEY__", ("api",)),
                _keyed_block(_API_KEY_WORDS, "__MASKED_API_KEY__", ("api",)),
                _flag(r"api[-_]?key", "__MASKED_API_KEY__", ("api",)),
            ),
            key=_at_end(_API_KEY_WORDS),
            token="__MASKED_API_KEY__",
        ),
        MaskPattern(
            "secret_key",
            (
                _keyed(_SECRET_WORDS, "__MASKED_SECRET_KEY__", ("secret", "credential")),
                _keyed_block(_SECRET_WORDS, "__MASKED_SECRET_KEY__", ("secret", "credential")),
                _flag(r"secret", "__MASKED_SECRET_KEY__", ("secret",)),
            ),
            key=_at_end(_SECRET_WORDS),
            token="__MASKED_SECRET_KEY__",
        ),
        MaskPattern(
            "password",
            (
                _keyed(_PASSWORD_WORDS, "__MASKED_PASSWORD__", ("pass", "pwd")),
                _keyed_block(_PASSWORD_WORDS, "__MASKED_PASSWORD__", ("pass", "pwd")),
                _flag(r"password|passwd|pass|pwd", "__MASKED_PASSWORD__", ("pass", "pwd")),
                # Container env entries: `name: DB_PASS` then `value: …` (YAML block or flow, or JSON).
                _rule(
                    rf"name(?<![\w-]name){_CLOSE_Q}[ \t]*+:[ \t]*+(?:\\*+[\"'])?[\w.\-]{{0,100}}?(?i:{_ENV_NAME_WORDS})"
                    rf"{_CLOSE_Q}[ \t]*+,?\s*+(?:\\*+[\"'])?value{_SEP}{_VALUE}",
                    "__MASKED_PASSWORD__",
                    triggers=("value",),
                ),
                UrlCredentialRule("__MASKED_PASSWORD__"),
                # `curl -u user:password`, `--user=user:password` (a numeric `-u 1000:1000` is a uid:gid).
                _rule(
                    r"-(?<![\w-]-)(?:u|-user)(?:[ \t]++|=)[\"']?[^\s:\"'@/]{1,256}+:(?!\d++(?:[\s\"']|$))"
                    r"(?P<v>[^\s\"']++)",
                    "__MASKED_PASSWORD__",
                    triggers=("-u",),
                ),
            ),
            key=_at_end(_PASSWORD_WORDS),
            token="__MASKED_PASSWORD__",
        ),
        MaskPattern(
            "email",
            (
                _rule(
                    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]{1,64}+@"
                    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.){1,10}[A-Za-z]{2,63}"
                    r"(?![A-Za-z0-9\-(@]|\.[A-Za-z0-9])",
                    "__MASKED_EMAIL__",
                    triggers=("@",),
                ),
            ),
        ),
        MaskPattern("base64_secret", (_rule(_B64_RUN, "__MASKED_BASE64_VALUE__", _looks_like_secret_base64),)),
        MaskPattern(
            "base64_short",
            (
                _rule(
                    rf":[ \t]*+(?:\\*+[\"'])?(?P<v>{_SHORT_B64})(?=(?:\\*+[\"'])?(?:[\s,;}}\])]|\Z))",
                    "__MASKED_BASE64_SHORT__",
                    _looks_like_short_base64,
                    triggers=(":",),
                ),
            ),
            value_rule=_rule(_SHORT_B64, "__MASKED_BASE64_SHORT__", _looks_like_short_base64),
        ),
    )
}

# Credentials of any kind; the precise shapes (PEM blocks, JWTs, AWS / GitHub / Slack ids) cost little and
# almost never hit anything else, so every default group carries them.
_BASIC = ["api_key", "password"]
_SECRETS = [
    *_BASIC, "token", "secret_key", "private_key", "aws_access_key", "aws_secret_key", "github_token",
    "slack_token",
]
PATTERN_GROUPS: dict[str, list[str]] = {
    "basic": _BASIC,
    "secrets": _SECRETS,
    "security": [KUBERNETES_SECRET, *_SECRETS, "certificate", "certificate_authority_data", "email", "ssh_key"],
    "kubernetes": [KUBERNETES_SECRET, *_SECRETS, "certificate_authority_data"],
    "cloud": ["aws_access_key", "aws_secret_key", "github_token", "slack_token"],
    "all": [KUBERNETES_SECRET, *BUILTIN_PATTERNS],
}


def known_groups() -> list[str]:
    """Group names accepted in `pattern_groups` (for config validation)."""
    return sorted(PATTERN_GROUPS)


def known_patterns() -> list[str]:
    """Pattern names accepted in `patterns` (for config validation)."""
    return sorted([KUBERNETES_SECRET, *BUILTIN_PATTERNS])
