"""The fan-out benchmark's subscribers on plain sockets: many WebSocket connections read by one epoll loop.

The subscribers stand for browsers on other machines, but here they share the 2 cores with the server they
measure: every microsecond of CPU they spend per frame is taken from the web processes and the worker. The
asyncio client (websockets on uvloop, one pending `recv` per socket) costs 60-80 µs of CPU per frame per socket,
four times the server's cost to write it, so with 100 subscribers the measured latency was mostly the clients'
own queueing. This client does only what the benchmark needs, in one thread per process: the opening handshake,
masked text frames out (the subscribe action, pongs), unmasked frames in, and the head of each text frame
(`{"type": …, "event_id": …`, the server's key order), read with one `recv` per socket per wake-up.
"""

from __future__ import annotations

import base64
import json
import os
import re
import select
import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from websockets.frames import Frame, Opcode

HEAD = re.compile(rb'\{"type": "([^"]*)"(?:, "event_id": (\d+))?')
TEXT, CLOSE, PING = 0x1, 0x8, 0x9


class Subscriber:
    """One WebSocket connection subscribed to one channel; records when each persistent event arrived."""

    def __init__(self, url: str, channel: str) -> None:
        parts = urlsplit(url)
        self.channel = channel
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        response = b""
        while b"\r\n\r\n" not in response:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection during the handshake")
            response += data
        head, _, rest = response.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(f"handshake refused: {head.splitlines()[0]!r}")
        self.sock.setblocking(False)
        self.buffer = bytearray(rest)  # frames the server sent right after its answer
        self.state = "connecting"  # -> subscribing -> subscribed -> done
        self.received: dict[int, float] = {}
        self.chunks = 0

    def _send(self, opcode: Opcode, data: bytes) -> None:
        self.sock.setblocking(True)
        try:
            self.sock.sendall(Frame(opcode, data).serialize(mask=True))  # a client masks what it sends
        finally:
            self.sock.setblocking(False)

    def read(self, now: float) -> None:
        """Take what the socket holds and handle every whole frame in it."""
        try:
            data = self.sock.recv(1 << 18)
        except BlockingIOError:
            return
        if not data:
            raise ConnectionError("the server closed the connection")
        buffer = self.buffer
        buffer += data
        pos, size = 0, len(buffer)
        while size - pos >= 2:
            first, length = buffer[pos], buffer[pos + 1]
            if length & 0x80 or not first & 0x80:
                raise AssertionError("a server frame must be unmasked and final")
            length &= 0x7F
            start = pos + 2
            if length == 126:
                if size - pos < 4:
                    break
                length, start = int.from_bytes(buffer[pos + 2:pos + 4], "big"), pos + 4
            elif length == 127:
                if size - pos < 10:
                    break
                length, start = int.from_bytes(buffer[pos + 2:pos + 10], "big"), pos + 10
            end = start + length
            if end > size:
                break
            self._frame(first & 0x0F, buffer, start, end, now)
            pos = end
        del buffer[:pos]

    def _frame(self, opcode: int, buffer: bytearray, start: int, end: int, now: float) -> None:
        if opcode == PING:
            self._send(Opcode.PONG, bytes(buffer[start:end]))
            return
        if opcode == CLOSE:
            raise ConnectionError("the server closed the WebSocket")
        if opcode != TEXT:
            return
        head = HEAD.match(buffer, start, end)
        if head is None:
            raise AssertionError(f"unexpected frame {bytes(buffer[start:start + 80])!r}")
        kind = head[1]
        if self.state == "subscribed":
            if head[2] is not None:
                self.received[int(head[2])] = now
            elif kind == b"stream.chunk":
                self.chunks += 1
            if kind == b"session.completed":
                self.state = "done"
        elif self.state == "connecting" and kind == b"connection.established":
            self._send(Opcode.TEXT, json.dumps({"action": "subscribe", "channel": self.channel}).encode())
            self.state = "subscribing"
        elif self.state == "subscribing" and kind == b"subscription.confirmed":
            self.state = "subscribed"


def run(url: str, channel: str, n: int, timeout: float, on_ready: Callable[[], object]) -> list[dict]:
    """n subscribers of `channel`; `on_ready()` once all are subscribed; their receipts once the session completed
    (or `timeout` seconds passed)."""
    subscribers = [Subscriber(url, channel) for _ in range(n)]
    by_fd = {s.sock.fileno(): s for s in subscribers}
    poller = select.epoll()
    for fd in by_fd:
        poller.register(fd, select.EPOLLIN)
    deadline, ready = time.monotonic() + timeout, False
    try:
        while time.monotonic() < deadline:
            if not ready and all(s.state in ("subscribed", "done") for s in subscribers):
                ready = True
                on_ready()
            if all(s.state == "done" for s in subscribers):
                break
            for fd, _ in poller.poll(0.5):
                by_fd[fd].read(time.time())
        if not ready:
            raise TimeoutError("not every subscriber was subscribed in time")
    finally:
        poller.close()
        for s in subscribers:
            s.sock.close()
    return [{"received": s.received, "chunks": s.chunks} for s in subscribers]
