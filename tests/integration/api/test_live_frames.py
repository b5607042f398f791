"""Live frames written straight to uvicorn's sockets: a client reads them as ordinary text messages, in order
with what ASGI `send` writes; the writer steps aside once the socket closes or an extension (deflate) is on."""

from __future__ import annotations

import asyncio
import socket

import pytest
import uvicorn
from websockets.asyncio.client import connect

from tarsy.streaming.frames import frame_writer, text_frame

pytestmark = pytest.mark.timeout(30)


async def _serve(app, *, deflate: bool):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, ws="websockets-sansio", ws_per_message_deflate=deflate, lifespan="off",
                            log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    return server, task, sock.getsockname()[1]


@pytest.mark.parametrize("deflate", [False, True])
async def test_frames_written_directly_arrive_in_order_until_the_socket_closes(deflate):
    written: list[bool] = []
    closed = asyncio.Event()

    async def app(scope, receive, send):
        assert (await receive())["type"] == "websocket.connect"
        await send({"type": "websocket.accept"})
        write = frame_writer(send)
        for n, text in enumerate(["first", "x" * 200, "y" * 70_000]):  # 7-bit, 16-bit and 64-bit lengths
            if write(text_frame(text)):
                written.append(True)
            else:
                await send({"type": "websocket.send", "text": text})
            await send({"type": "websocket.send", "text": f"asgi {n}"})
        assert (await receive())["type"] == "websocket.disconnect"
        written.append(write(text_frame("after close")))
        closed.set()

    server, task, port = await _serve(app, deflate=deflate)
    try:
        async with connect(f"ws://127.0.0.1:{port}", max_size=None) as ws:
            got = [await ws.recv() for _ in range(6)]
        await asyncio.wait_for(closed.wait(), 5)
    finally:
        server.should_exit = True
        await task
    assert got == ["first", "asgi 0", "x" * 200, "asgi 1", "y" * 70_000, "asgi 2"]
    # deflate negotiated: the pre-built (uncompressed) frame would be wrong, so ASGI sends every one
    assert written == ([False] if deflate else [True, True, True, False])


async def test_a_socket_that_stops_reading_turns_the_writer_off_instead_of_buffering_without_bound():
    outcome: list[int] = []

    async def app(scope, receive, send):
        await receive()
        await send({"type": "websocket.accept"})
        write, frame, n = frame_writer(send), text_frame("z" * 65_536), 0
        while n < 2_000 and write(frame):  # 128 MiB at most; the client reads nothing
            n += 1
        outcome.append(n)

    server, task, port = await _serve(app, deflate=False)
    try:
        async with connect(f"ws://127.0.0.1:{port}", max_size=None, close_timeout=1):
            while not outcome:
                await asyncio.sleep(0.01)
    finally:
        server.should_exit = True
        await task
    assert outcome[0] < 2_000  # stopped at the transport's high-water mark, past what the kernel took


def test_no_writer_for_another_server():
    async def send(message):
        pass

    assert frame_writer(send) is None
