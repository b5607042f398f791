"""A threaded local HTTP server that plays queued replies and records requests.

The LLM fakes (fake_gemini, fake_openai) share it: each adds only the wire
format of its vendor. Real SDKs talk to it over loopback, so tests exercise
the real request encoding and stream parsing.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

STALL_CAP_S = 60.0  # a stalled reply never outlives a forgotten test by much
POLL_S = 0.02  # shutdown() waits up to one poll interval; keep fixture teardown fast


@dataclass
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    """What the server sends for one request: an error status, or SSE events / one JSON body."""

    status: int = 200
    events: list[Any] = field(default_factory=list)  # JSON-able SSE payloads, in order
    body: Any = None  # JSON body for errors and non-streaming calls
    stall_after: int | None = None  # stop sending after this many events and hang
    stall_s: float = STALL_CAP_S
    event_delay_s: float = 0.0  # pause between events, to make streaming observable
    done_marker: str | None = None  # e.g. "[DONE]" for OpenAI


class SSEFakeServer:
    """Base class: subclasses turn a reply spec (dict) into a `Reply` for a given request."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, repeat_last: bool = False) -> None:
        self._host, self._port = host, port
        self.repeat_last = repeat_last
        self.requests: list[RecordedRequest] = []
        self._queue: deque[dict[str, Any]] = deque()
        self._last: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------

    def start(self) -> SSEFakeServer:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer((self._host, self._port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": POLL_S}, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases stalled replies
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> SSEFakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ---- script ----------------------------------------------------------

    def queue(self, *specs: dict[str, Any]) -> None:
        with self._lock:
            self._queue.extend(specs)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self._last = None

    def load_script(self, path: str | Path) -> None:
        """A JSON/YAML file: a list of reply specs, or {"responses": [...], "repeat_last": bool}."""
        text = Path(path).read_text()
        data: Any
        if str(path).endswith((".yaml", ".yml")):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
        if isinstance(data, dict):
            self.repeat_last = bool(data.get("repeat_last", self.repeat_last))
            data = data.get("responses", [])
        self.queue(*data)

    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def _next_spec(self) -> dict[str, Any] | None:
        with self._lock:
            if self._queue:
                self._last = self._queue.popleft()
                return self._last
            return self._last if self.repeat_last else None

    # ---- subclass hooks --------------------------------------------------

    def route(self, request: RecordedRequest) -> tuple[bool, bool]:
        """(known endpoint, streaming) for a request."""
        raise NotImplementedError

    def build_reply(self, spec: dict[str, Any] | None, request: RecordedRequest, stream: bool) -> Reply:
        raise NotImplementedError

    def direct_reply(self, request: RecordedRequest) -> Reply | None:
        """A reply computed from the request alone (embeddings), which takes no queued spec; None: use the queue."""
        return None

    # ---- serving ---------------------------------------------------------

    def _serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        request = RecordedRequest(
            method, parts.path, parts.query, {k.lower(): v for k, v in handler.headers.items()}, body
        )
        known, stream = self.route(request)
        if not known:
            _send_json(handler, 404, {"error": {"code": 404, "message": f"unknown path {parts.path}"}})
            return
        with self._lock:
            self.requests.append(request)
        reply = self.direct_reply(request)
        if reply is None:
            reply = self.build_reply(self._next_spec(), request, stream)
        if reply.status != 200 or not stream:
            _send_json(handler, reply.status, reply.body)
            return
        self._stream(handler, reply)

    def _stream(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True
        try:
            for index, event in enumerate(reply.events):
                if reply.stall_after is not None and index >= reply.stall_after:
                    break
                if index and reply.event_delay_s:
                    time.sleep(reply.event_delay_s)
                _write_event(handler, json.dumps(event))
            if reply.stall_after is not None:
                self._stopping.wait(reply.stall_s)
            elif reply.done_marker:
                _write_event(handler, reply.done_marker)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its deadline passed)


def _write_event(handler: BaseHTTPRequestHandler, data: str) -> None:
    handler.wfile.write(f"data: {data}\n\n".encode())
    handler.wfile.flush()


def _send_json(handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
    payload = json.dumps(body if body is not None else {}).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.send_header("Connection", "close")  # no keep-alive: a stopped server must stop answering
    handler.end_headers()
    handler.wfile.write(payload)
    handler.close_connection = True


def _make_handler(server: SSEFakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            server._serve(self, "POST")

        def do_GET(self) -> None:  # noqa: N802
            server._serve(self, "GET")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
            return

    return Handler


def run_cli(factory: Callable[[int], SSEFakeServer], description: str) -> None:
    """`python -m tests.fakes.fake_x --port N --script FILE`: serve until interrupted."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", default="", help="JSON/YAML list of reply specs")
    parser.add_argument("--repeat-last", action="store_true", help="repeat the last reply when the script runs out")
    args = parser.parse_args()
    server = factory(args.port)
    server.repeat_last = args.repeat_last
    if args.script:
        server.load_script(args.script)
    server.start()
    print(f"listening on {server.url}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
