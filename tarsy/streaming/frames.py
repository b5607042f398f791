"""The fan-out's fast path: one WebSocket frame, built once per event, written straight to each socket.

Through ASGI, every socket pays again for the same event: Channels' session wrapper, uvicorn's `send` and
websockets' framing of the same text — about a third of the ~32 µs a socket costs per event here (the rest is the
kernel's write). A server's frames are unmasked, so a text frame's bytes are the same for every socket.

No ASGI API writes raw frames, so the fast path is taken only where it is known to be right: uvicorn's
websockets-sansio protocol (the production server, tests/support/processes.py UVICORN_OPTIONS), with no extension
negotiated (with per-message deflate on, each socket compresses its own frames), while the connection is open and
its transport is below the high-water mark. Anything else — a closing or closed socket, backpressure, another server
(daphne, Channels' test communicator) — goes through ASGI `send`, which waits, raises or frames exactly as before.
Every write is a whole frame on the event loop's thread, so frames never interleave with the protocol's own (pings,
close).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from websockets.frames import Frame, Opcode
from websockets.protocol import State

FrameWriter = Callable[[bytes], bool]


def text_frame(text: str) -> bytes:
    """The server-side (unmasked) WebSocket text frame carrying `text`."""
    return Frame(Opcode.TEXT, text.encode()).serialize(mask=False)


def frame_writer(send: Any) -> FrameWriter | None:
    """For uvicorn's websockets-sansio ASGI `send`: a function that writes a pre-built frame to its socket and says
    whether it did (False: use `send`). None for any other server."""
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    protocol = getattr(send, "__self__", None)
    if not isinstance(protocol, WebSocketsSansIOProtocol):
        return None

    def write(frame: bytes) -> bool:
        # Closing (either side) leaves OPEN; a lost connection closes the transport; `writable` is uvicorn's
        # backpressure flag (cleared above the transport's high-water mark, where ASGI `send` waits).
        if (protocol.conn.state is not State.OPEN or protocol.transport.is_closing() or not protocol.writable.is_set()
                or protocol.conn.extensions):
            return False
        protocol.transport.write(frame)
        return True

    return write


class FrameWriterMiddleware:
    """Puts `frame_writer(send)` in the scope as `tarsy.frame_writer`, before Channels' middleware wraps `send`."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        return await self.inner({**scope, "tarsy.frame_writer": frame_writer(send)}, receive, send)
