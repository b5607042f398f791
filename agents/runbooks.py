"""Runbook fetching: an alert's runbook URL, bounded and allow-listed, falling back to the default runbook.

A runbook is a convenience, never a reason to fail an investigation: every failure (disallowed host, HTTP error,
timeout, oversize body) returns the default runbook with a warning saying what went wrong. The URL comes from
the alert submitter, so hosts are checked against the allow-list before any request, redirects are followed
only to allowed hosts, and the GitHub token is only ever sent to GitHub hosts. A fetched runbook is outside text:
it is masked before it is cached or enters a prompt. Credentials in a runbook URL are masked when the alert is
stored, so such a URL is not fetched (GITHUB_TOKEN is how TARSy authenticates to GitHub).
"""

from __future__ import annotations

import functools
import os
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin, urlsplit

import httpx

from agents.mcp.masking.boundary import URL_CREDENTIAL_MASK, mask_text, mask_url

CACHE_TTL_S = 300.0  # runbooks change rarely; an alert storm must not refetch the same page for every session
MAX_REDIRECTS = 3  # enough for an http→https or a moved page; each hop is re-checked against the allow-list
GITHUB_HOSTS = ("github.com", "githubusercontent.com")  # and their subdomains: where GITHUB_TOKEN may go


@dataclass(frozen=True)
class RunbookResult:
    """The runbook text for the prompt, where it came from, and why the URL was not used ("" when it was)."""

    content: str
    source: Literal["url", "default"]
    warning: str = ""


class RunbookError(Exception):
    """A fetch failure whose message becomes the fallback warning."""


_cache: dict[str, tuple[float, str]] = {}
_cache_lock = threading.Lock()


def clear_runbook_cache() -> None:
    with _cache_lock:
        _cache.clear()


def github_raw_url(url: str) -> str:
    """`github.com/<owner>/<repo>/blob|raw/<ref>/<path>` → the raw.githubusercontent.com URL of the same file."""
    parts = urlsplit(url)
    segments = parts.path.strip("/").split("/")
    if parts.hostname in ("github.com", "www.github.com") and len(segments) >= 5 and segments[2] in ("blob", "raw"):
        owner, repo, _, *rest = segments
        return f"https://raw.githubusercontent.com/{owner}/{repo}/{'/'.join(rest)}"
    return url


def host_allowed(host: str, allowed_domains: list[str]) -> bool:
    """Exact host or a subdomain of an allowed domain (`docs.example.com` under `example.com`)."""
    host = host.lower().rstrip(".")
    for domain in allowed_domains:
        domain = domain.lower().strip().rstrip(".")
        if domain and (host == domain or host.endswith("." + domain)):
            return True
    return False


def fetch_runbook(url: str, *, allowed_domains: list[str], default: str, github_token: str | None = None,
                  timeout: float = 10.0, max_bytes: int = 1_048_576) -> RunbookResult:
    """The runbook at `url` (cached for CACHE_TTL_S), or `default` with a warning when it cannot be used."""
    url = url.strip()
    if not url:
        return RunbookResult(content=default, source="default")
    token = github_token if github_token is not None else os.environ.get("GITHUB_TOKEN", "")
    target = github_raw_url(url)
    try:
        _check_url(url, allowed_domains)  # before the cache too: the allow-list may have changed since
        if URL_CREDENTIAL_MASK in url:
            raise RunbookError("its credentials were masked when the alert was stored (use a URL without them)")
        cached = _cache_get(target)
        if cached is not None:
            return RunbookResult(content=cached, source="url")
        content = mask_text(_download(target, allowed_domains + _implied_domains(url, target), token, timeout,
                                      max_bytes))
    except RunbookError as exc:
        return RunbookResult(content=default, source="default",
                             warning=f"runbook {mask_url(url)}: {exc}; using the default")
    _cache_put(target, content)
    return RunbookResult(content=content, source="url")


def _implied_domains(url: str, target: str) -> list[str]:
    """An allowed github.com blob URL implies its raw.githubusercontent.com twin."""
    return [urlsplit(target).hostname or ""] if target != url else []


def _check_url(url: str, allowed_domains: list[str]) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise RunbookError(f"unsupported scheme {parts.scheme!r} (http or https only)")
    if not parts.hostname:
        raise RunbookError("the URL has no host")
    if not host_allowed(parts.hostname, allowed_domains):
        raise RunbookError(f"host {parts.hostname!r} is not in the allowed runbook domains")


def _headers(url: str, token: str) -> dict[str, str]:
    headers = {"Accept": "text/plain, text/markdown, */*"}
    host = urlsplit(url).hostname or ""
    if token and host_allowed(host, list(GITHUB_HOSTS)):
        headers["Authorization"] = f"token {token}"
    return headers


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """Built once per process: loading the CA bundle costs more than a small runbook download."""
    return httpx.create_ssl_context()


def _download(url: str, allowed_domains: list[str], token: str, timeout: float, max_bytes: int) -> str:
    deadline = time.monotonic() + timeout  # httpx timeouts are per operation; a trickling server must not stall us
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False, verify=_ssl_context()) as client:
            for _ in range(MAX_REDIRECTS + 1):
                _check_url(url, allowed_domains)
                with client.stream("GET", url, headers=_headers(url, token)) as response:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        continue
                    if response.status_code != 200:
                        raise RunbookError(f"HTTP {response.status_code}")
                    return _read_capped(response, max_bytes, deadline)
    except httpx.TimeoutException as exc:
        raise RunbookError(f"timed out after {timeout:g} s") from exc
    except httpx.HTTPError as exc:
        raise RunbookError(f"request failed: {exc.__class__.__name__}: {exc}") from exc
    raise RunbookError(f"more than {MAX_REDIRECTS} redirects")


def _read_capped(response: httpx.Response, max_bytes: int, deadline: float) -> str:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise RunbookError(f"runbook is {int(declared)} bytes, over the {max_bytes}-byte limit")
    body = bytearray()
    for chunk in response.iter_bytes():
        body.extend(chunk)
        if len(body) > max_bytes:
            raise RunbookError(f"runbook exceeds the {max_bytes}-byte limit")
        if time.monotonic() > deadline:
            raise httpx.ReadTimeout("runbook download exceeded its deadline")
    return body.decode(response.charset_encoding or "utf-8", errors="replace")


def _cache_get(url: str) -> str | None:
    with _cache_lock:
        entry = _cache.get(url)
        if entry is None or entry[0] < time.monotonic():
            _cache.pop(url, None)
            return None
        return entry[1]


def _cache_put(url: str, content: str) -> None:
    with _cache_lock:
        _cache[url] = (time.monotonic() + CACHE_TTL_S, content)
