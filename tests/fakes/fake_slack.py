"""A local server speaking the Slack Web API wire protocol (the part TARSy uses), for slack-sdk's WebClient.

`POST /api/chat.postMessage`, `/api/chat.update`, `/api/chat.postEphemeral` and `/api/views.open` with a JSON or
form body, and `GET /api/users.info?user=…`, with `Authorization: Bearer <token>` answer like Slack: HTTP 200 with
`{"ok": true, …}` or `{"ok": false, "error": …}`. A channel name (`#alerts`) is answered with a channel ID
(`CALERTS`), and a message over Block Kit's limits (50 blocks, 3,000 characters of section text) is refused
with `invalid_blocks`, as Slack does. Members are the `users` given (ID → handle, email); ephemeral messages are
kept in `ephemeral`, opened modals in `views`. Every call is recorded (`calls`), with the time it arrived. Faults,
for the tests:

    fake.rate_limit("chat.postMessage", retry_after=2)   # the next call answers 429 with Retry-After: 2
    fake.fail("chat.update", "channel_not_found")        # the next call answers ok=false with that error
    fake.outage = True                                   # every call answers 503 until cleared

Run standalone: `python -m tests.fakes.fake_slack --port 8767`.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "xoxb-test-token"
POLL_S = 0.02
MAX_BLOCKS = 50  # Slack refuses a message of more blocks (invalid_blocks)
MAX_SECTION_TEXT = 3000  # and a section text of more characters


@dataclass
class SlackCall:
    """One Web API request as received (`status` is what the fake answered)."""

    method: str
    body: dict[str, Any]
    headers: dict[str, str]
    at: float
    status: int = 200
    ok: bool = True


@dataclass
class SlackMember:
    id: str
    name: str
    email: str = ""


@dataclass
class SlackMessage:
    channel: str
    ts: str
    text: str
    blocks: list[Any]
    thread_ts: str = ""
    edits: list[dict[str, Any]] = field(default_factory=list)


def channel_id(channel: str) -> str:
    """Slack answers with IDs: `#alerts` → `CALERTS`; an ID stays itself."""
    if re.fullmatch(r"[CGD][A-Z0-9]{2,}", channel):
        return channel
    return "C" + re.sub(r"[^A-Z0-9]", "", channel.lstrip("#").upper())


class FakeSlack:
    """The fake workspace: messages by ts, every call in order, queued faults."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, token: str = TOKEN) -> None:
        self._host, self._port, self.token = host, port, token
        self.calls: list[SlackCall] = []
        self.messages: dict[str, SlackMessage] = {}
        self.members: dict[str, SlackMember] = {}
        self.ephemeral: list[dict[str, str]] = []
        self.views: list[dict[str, Any]] = []
        self.outage = False
        self._faults: dict[str, deque[dict[str, Any]]] = {}
        self._before_reply: deque[Any] = deque()
        self._ts = itertools.count(1)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> FakeSlack:
        self._server = ThreadingHTTPServer((self._host, self._port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": POLL_S},
                                        name="FakeSlack", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The Web API base URL for WebClient(base_url=…)."""
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/"

    def add_member(self, user_id: str, name: str, email: str = "") -> None:
        with self._lock:
            self.members[user_id] = SlackMember(id=user_id, name=name, email=email)

    # ---- faults ------------------------------------------------------------------------------------------

    def rate_limit(self, method: str, retry_after: int = 1, times: int = 1) -> None:
        with self._lock:
            self._faults.setdefault(method, deque()).extend([{"status": 429, "retry_after": retry_after}] * times)

    def fail(self, method: str, error: str, times: int = 1) -> None:
        with self._lock:
            self._faults.setdefault(method, deque()).extend([{"error": error}] * times)

    def before_reply(self, action: Any) -> None:
        """Run `action()` once, while the next thread reply is being posted (before Slack answers): what happens
        in TARSy while a reply is in flight."""
        with self._lock:
            self._before_reply.append(action)

    # ---- reading what happened ---------------------------------------------------------------------------

    def calls_to(self, method: str, *, ok: bool | None = None) -> list[SlackCall]:
        with self._lock:
            return [c for c in self.calls if c.method == method and (ok is None or c.ok == ok)]

    def top_level(self) -> list[SlackMessage]:
        with self._lock:
            return [m for m in self.messages.values() if not m.thread_ts]

    def replies(self, ts: str) -> list[SlackMessage]:
        with self._lock:
            return [m for m in self.messages.values() if m.thread_ts == ts]

    # ---- the API -----------------------------------------------------------------------------------------

    def handle(self, method: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        call = SlackCall(method=method, body=body, headers=headers, at=time.monotonic())
        with self._lock:
            action = self._before_reply.popleft() if method == "chat.postMessage" and body.get("thread_ts") \
                and self._before_reply else None
        if action is not None:
            action()
        with self._lock:
            self.calls.append(call)
            status, extra, payload = self._answer(method, body, headers)
            call.status, call.ok = status, status == 200 and bool(payload.get("ok"))
        return status, extra, payload

    def _answer(self, method: str, body: dict[str, Any], headers: dict[str, str]):
        if self.outage:
            return 503, {}, {"ok": False, "error": "service_unavailable"}
        fault = self._faults.get(method)
        if fault:
            spec = fault.popleft()
            if spec.get("status") == 429:
                return 429, {"Retry-After": str(spec["retry_after"])}, {"ok": False, "error": "ratelimited"}
            return 200, {}, {"ok": False, "error": spec["error"]}
        if headers.get("authorization") != f"Bearer {self.token}":
            return 200, {}, {"ok": False, "error": "invalid_auth"}
        if method == "chat.postMessage":
            return 200, {}, self._post(body)
        if method == "chat.update":
            return 200, {}, self._update(body)
        if method == "chat.postEphemeral":
            return 200, {}, self._ephemeral(body)
        if method == "users.info":
            return 200, {}, self._user(body)
        if method == "views.open":
            return 200, {}, self._open_view(body)
        return 200, {}, {"ok": False, "error": "unknown_method"}

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        if not body.get("text") and not body.get("blocks"):
            return {"ok": False, "error": "no_text"}
        if not _blocks_valid(_blocks(body.get("blocks"))):
            return {"ok": False, "error": "invalid_blocks"}
        channel = channel_id(str(body["channel"]))
        thread_ts = str(body.get("thread_ts") or "")
        if thread_ts and thread_ts not in self.messages:
            return {"ok": False, "error": "thread_not_found"}
        ts = f"1700000000.{next(self._ts):06d}"
        self.messages[ts] = SlackMessage(channel=channel, ts=ts, text=str(body.get("text", "")),
                                         blocks=_blocks(body.get("blocks")), thread_ts=thread_ts)
        return {"ok": True, "channel": channel, "ts": ts, "message": {"text": body.get("text", ""), "ts": ts}}

    def _update(self, body: dict[str, Any]) -> dict[str, Any]:
        message = self.messages.get(str(body.get("ts", "")))
        if message is None or message.channel != channel_id(str(body.get("channel", ""))):
            return {"ok": False, "error": "message_not_found"}
        if not _blocks_valid(_blocks(body.get("blocks"))):
            return {"ok": False, "error": "invalid_blocks"}
        message.edits.append({"text": message.text, "blocks": message.blocks})
        message.text, message.blocks = str(body.get("text", "")), _blocks(body.get("blocks"))
        return {"ok": True, "channel": message.channel, "ts": message.ts, "text": message.text}


    def _ephemeral(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        if str(body.get("user", "")) not in self.members:
            return {"ok": False, "error": "user_not_in_channel"}
        self.ephemeral.append({"channel": channel_id(str(body["channel"])), "user": str(body["user"]),
                               "text": str(body.get("text", ""))})
        return {"ok": True, "message_ts": f"1700000000.{next(self._ts):06d}"}

    def _open_view(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("trigger_id"):
            return {"ok": False, "error": "invalid_trigger_id"}
        view = body.get("view")
        view = json.loads(view) if isinstance(view, str) else view
        if not isinstance(view, dict) or view.get("type") != "modal":
            return {"ok": False, "error": "invalid_arguments"}
        self.views.append({"trigger_id": str(body["trigger_id"]), **view})
        return {"ok": True, "view": {"id": f"V{len(self.views):06d}", **view}}

    def _user(self, body: dict[str, Any]) -> dict[str, Any]:
        member = self.members.get(str(body.get("user", "")))
        if member is None:
            return {"ok": False, "error": "user_not_found"}
        profile = {"real_name": member.name, "display_name": member.name, **({"email": member.email}
                                                                              if member.email else {})}
        return {"ok": True, "user": {"id": member.id, "name": member.name, "deleted": False, "profile": profile}}


def _blocks_valid(blocks: list[Any]) -> bool:
    """Slack's Block Kit limits that TARSy's long texts meet: the number of blocks and a section's text."""
    sections = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "section"]
    return len(blocks) <= MAX_BLOCKS and all(
        len(str(t.get("text", ""))) <= MAX_SECTION_TEXT for t in sections if isinstance(t, dict))


def _blocks(value: Any) -> list[Any]:
    if isinstance(value, str):  # form-encoded bodies carry blocks as JSON text
        value = json.loads(value or "[]")
    return list(value or [])


def _handler(fake: FakeSlack) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming); Slack's read methods
            self._dispatch({k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()})

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8")
            if (self.headers.get("Content-Type") or "").startswith("application/json"):
                body = json.loads(raw or "{}")
            else:
                body = {k: v[0] for k, v in parse_qs(raw).items()}
            self._dispatch(body)

        def _dispatch(self, body: dict[str, Any]) -> None:
            parts = urlsplit(self.path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            if not parts.path.startswith("/api/"):
                self._send(404, {}, {"ok": False, "error": "unknown_method"})
                return
            self._send(*fake.handle(parts.path.removeprefix("/api/"), body, headers))

        def _send(self, status: int, extra: dict[str, str], payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8767)
    args = parser.parse_args()
    fake = FakeSlack(port=args.port).start()
    print(f"fake Slack Web API on {fake.url} (token {fake.token})", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
