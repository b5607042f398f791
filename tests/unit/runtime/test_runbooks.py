"""Runbook fetching against a real HTTP server on loopback."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agents import runbooks
from agents.runbooks import fetch_runbook, github_raw_url, host_allowed

RUNBOOK = "# Pod crash loop\n\n1. Check the logs.\n"
DEFAULT = "default runbook"
LOOPBACK = ["127.0.0.1"]
STALL_S = 3.0  # how long /stall waits; the client timeout under test is far shorter


class _Server:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.release = threading.Event()
        handler = self._handler()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                server.requests.append((self.path, dict(self.headers)))
                route = getattr(self, "_" + self.path.strip("/").replace("-", "_"), None)
                if route is None:
                    self._send(404, b"missing")
                else:
                    route()

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for key, value in (headers or {"Content-Length": str(len(body))}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def _ok(self) -> None:
                self._send(200, RUNBOOK.encode(), {"Content-Length": str(len(RUNBOOK.encode())),
                                                   "Content-Type": "text/markdown; charset=utf-8"})

            def _big_declared(self) -> None:
                self._send(200, b"x" * 5000)

            def _big_streamed(self) -> None:
                self.send_response(200)
                self.end_headers()  # no Content-Length: the client must count while reading
                try:
                    for _ in range(50):
                        self.wfile.write(b"y" * 1000)
                        self.wfile.flush()
                except OSError:
                    pass  # the client stopped reading past its cap

            def _stall(self) -> None:
                server.release.wait(STALL_S)
                self._ok()

            def _redirect_out(self) -> None:
                self._send(302, b"", {"Location": f"http://localhost:{server.httpd.server_address[1]}/ok",
                                      "Content-Length": "0"})

            def _redirect_in(self) -> None:
                self._send(302, b"", {"Location": "/ok", "Content-Length": "0"})

        return Handler

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    thread = threading.Thread(target=srv.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    runbooks.clear_runbook_cache()
    yield srv
    srv.release.set()
    srv.httpd.shutdown()
    srv.httpd.server_close()
    thread.join(timeout=5)
    runbooks.clear_runbook_cache()


def test_allowed_url_is_fetched(server):
    result = fetch_runbook(f"{server.base}/ok", allowed_domains=LOOPBACK, default=DEFAULT)
    assert (result.content, result.source, result.warning) == (RUNBOOK, "url", "")


def test_disallowed_host_is_rejected_without_a_request(server):
    result = fetch_runbook(f"{server.base}/ok", allowed_domains=["example.com"], default=DEFAULT)
    assert result.content == DEFAULT and result.source == "default"
    assert "not in the allowed runbook domains" in result.warning
    assert server.requests == []


def test_redirect_to_disallowed_host_is_not_followed(server):
    result = fetch_runbook(f"{server.base}/redirect-out", allowed_domains=LOOPBACK, default=DEFAULT)
    assert result.source == "default" and "'localhost'" in result.warning
    assert server.paths() == ["/redirect-out"]


def test_redirect_within_allowed_host_is_followed(server):
    result = fetch_runbook(f"{server.base}/redirect-in", allowed_domains=LOOPBACK, default=DEFAULT)
    assert result.content == RUNBOOK
    assert server.paths() == ["/redirect-in", "/ok"]


@pytest.mark.parametrize("path", ["/big-declared", "/big-streamed"])
def test_oversize_runbook_falls_back(server, path):
    result = fetch_runbook(f"{server.base}{path}", allowed_domains=LOOPBACK, default=DEFAULT, max_bytes=2000)
    assert result.content == DEFAULT and result.source == "default"
    assert "2000-byte limit" in result.warning


def test_stalled_server_times_out_and_falls_back(server):
    started = time.monotonic()
    result = fetch_runbook(f"{server.base}/stall", allowed_domains=LOOPBACK, default=DEFAULT, timeout=0.3)
    assert time.monotonic() - started < STALL_S / 2
    assert result.content == DEFAULT and "timed out" in result.warning


def test_http_error_falls_back_with_status(server):
    result = fetch_runbook(f"{server.base}/nope", allowed_domains=LOOPBACK, default=DEFAULT)
    assert result.content == DEFAULT and "HTTP 404" in result.warning


def test_unreachable_server_falls_back():
    runbooks.clear_runbook_cache()
    result = fetch_runbook("http://127.0.0.1:9/ok", allowed_domains=LOOPBACK, default=DEFAULT, timeout=1.0)
    assert result.source == "default" and "request failed" in result.warning


@pytest.mark.parametrize("url", ["", "   "])
def test_no_url_means_default_without_warning(url):
    assert fetch_runbook(url, allowed_domains=LOOPBACK, default=DEFAULT) == runbooks.RunbookResult(DEFAULT, "default")


def test_non_http_scheme_is_rejected():
    result = fetch_runbook("file:///etc/passwd", allowed_domains=["", "etc"], default=DEFAULT)
    assert result.source == "default" and "unsupported scheme" in result.warning


def test_second_fetch_is_served_from_cache(server):
    first = fetch_runbook(f"{server.base}/ok", allowed_domains=LOOPBACK, default=DEFAULT)
    second = fetch_runbook(f"{server.base}/ok", allowed_domains=LOOPBACK, default=DEFAULT)
    assert first == second and second.source == "url"
    assert server.paths() == ["/ok"]


def test_expired_cache_entry_is_refetched(server, monkeypatch):
    fetch_runbook(f"{server.base}/ok", allowed_domains=LOOPBACK, default=DEFAULT)
    monkeypatch.setattr(runbooks, "CACHE_TTL_S", 0.0)
    runbooks.clear_runbook_cache()
    fetch_runbook(f"{server.base}/ok", allowed_domains=LOOPBACK, default=DEFAULT)
    fetch_runbook(f"{server.base}/ok", allowed_domains=LOOPBACK, default=DEFAULT)
    assert server.paths() == ["/ok", "/ok", "/ok"]


def test_failures_are_not_cached(server):
    fetch_runbook(f"{server.base}/nope", allowed_domains=LOOPBACK, default=DEFAULT)
    fetch_runbook(f"{server.base}/nope", allowed_domains=LOOPBACK, default=DEFAULT)
    assert server.paths() == ["/nope", "/nope"]


def test_github_token_is_not_sent_to_other_hosts(server):
    fetch_runbook(f"{server.base}/ok", allowed_domains=LOOPBACK, default=DEFAULT, github_token="ghp_secret")
    headers = {key.lower(): value for key, value in server.requests[0][1].items()}
    assert "authorization" not in headers


def test_github_token_goes_to_github_hosts_only():
    assert runbooks._headers("https://raw.githubusercontent.com/o/r/main/a.md", "t1")["Authorization"] == "token t1"
    assert "Authorization" not in runbooks._headers("https://evilgithub.com/a.md", "t1")
    assert "Authorization" not in runbooks._headers("https://raw.githubusercontent.com/o/r/main/a.md", "")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/acme/runbooks/blob/main/k8s/crashloop.md",
         "https://raw.githubusercontent.com/acme/runbooks/main/k8s/crashloop.md"),
        ("https://github.com/acme/runbooks/raw/v1.2/a.md", "https://raw.githubusercontent.com/acme/runbooks/v1.2/a.md"),
        ("https://github.com/acme/runbooks/blob/main/a.md?plain=1#L3",
         "https://raw.githubusercontent.com/acme/runbooks/main/a.md"),
        ("https://github.com/acme/runbooks/tree/main/k8s", "https://github.com/acme/runbooks/tree/main/k8s"),
        ("https://raw.githubusercontent.com/acme/r/main/a.md", "https://raw.githubusercontent.com/acme/r/main/a.md"),
        ("https://gitlab.com/acme/r/blob/main/a.md", "https://gitlab.com/acme/r/blob/main/a.md"),
    ],
)
def test_github_blob_urls_become_raw_urls(url, expected):
    assert github_raw_url(url) == expected


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("github.com", True),
        ("docs.github.com", True),
        ("GitHub.COM", True),
        ("evilgithub.com", False),
        ("github.com.evil.io", False),
        ("raw.githubusercontent.com", False),
    ],
)
def test_host_allow_list_matches_exact_host_or_subdomain(host, allowed):
    assert host_allowed(host, ["github.com"]) is allowed
