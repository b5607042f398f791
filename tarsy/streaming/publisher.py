"""Event publishing: persist, then send to Channels groups after the transaction commits.

The database is the truth; the socket only notifies. Persistent events are
stored in `Event` (one row per channel, the row id is the client's catch-up
cursor) and sent on commit from the stored row. Transient `stream.chunk`
events are sent at once and never stored.

Sending happens on one event loop per process: the ASGI server's loop in
embedded mode (an in-memory layer only works there — PITFALLS.md), otherwise a
background loop thread owned by this module (avoids a new loop per
`async_to_sync` call on the hot path).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from channels.layers import get_channel_layer
from django.db import transaction

from tarsy.models import Event
from tarsy.services.events import events_store

log = logging.getLogger(__name__)

SESSIONS_CHANNEL = "sessions"
SEND_TIMEOUT_S = 5.0  # a stuck channel layer must not stall an iteration

_loop: asyncio.AbstractEventLoop | None = None
_outbox: asyncio.Queue | None = None
_loop_lock = threading.Lock()
_batch: ContextVar[list[Event] | None] = ContextVar("tarsy_event_batch", default=None)


def session_channel(session_id: Any) -> str:
    return f"session:{session_id}"


def group_name(channel: str) -> str:
    """Channels group names allow only [a-zA-Z0-9_.-]."""
    return channel.replace(":", ".")


async def _drain(queue: asyncio.Queue) -> None:
    """One sender per process keeps events in the order they were published."""
    while True:
        group, message = await queue.get()
        layer = get_channel_layer()
        try:
            if layer is not None:
                await asyncio.wait_for(layer.group_send(group, message), SEND_TIMEOUT_S)
        except Exception:  # persisted events are recovered by catch-up; chunks are transient
            log.warning("publishing to %s failed", group, exc_info=True)


def use_event_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Send on this loop (the ASGI server's, in embedded mode); call from that loop's thread or before it runs."""
    global _loop, _outbox
    with _loop_lock:
        _loop, _outbox = loop, None


def _start_outbox(loop: asyncio.AbstractEventLoop) -> asyncio.Queue:
    queue: asyncio.Queue = asyncio.Queue()

    def _start() -> None:
        loop.create_task(_drain(queue))

    loop.call_soon_threadsafe(_start)
    return queue


def _target() -> tuple[asyncio.AbstractEventLoop, asyncio.Queue]:
    global _loop, _outbox
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="tarsy-publisher", daemon=True).start()
            _loop, _outbox = loop, None
        if _outbox is None:
            _outbox = _start_outbox(_loop)
        return _loop, _outbox


def _send(group: str, message: dict[str, Any]) -> None:
    loop, queue = _target()
    loop.call_soon_threadsafe(queue.put_nowait, (group, message))


def _wire(event: dict[str, Any]) -> dict[str, Any]:
    """The group message: the event, and its JSON encoded once here rather than once per subscriber."""
    return {"type": "tarsy.event", "event_id": event.get("event_id"), "channel": event.get("channel", ""),
            "text": json.dumps(event, ensure_ascii=False, default=str)}


def event_message(event: Event) -> dict[str, Any]:
    return {"type": event.type, "event_id": event.id, "channel": event.channel, **event.payload}


def publish(event_type: str, payload: dict[str, Any], *, session_id: Any = None,
            channels: list[str] | None = None) -> list[Event]:
    """Store a persistent event (one row per channel) and send it when the current transaction commits."""
    if channels is None:
        channels = [session_channel(session_id)] if session_id else [SESSIONS_CHANNEL]
    rows = [Event(session_id=session_id, channel=ch, type=event_type, payload=payload) for ch in channels]
    batch = _batch.get()
    if batch is not None:
        batch.extend(rows)
    else:  # one INSERT for every channel's row
        events_store(rows=rows)

    def _after_commit() -> None:
        for row in rows:
            _send(group_name(row.channel), _wire(event_message(row)))

    transaction.on_commit(_after_commit)
    return rows


@contextmanager
def batched_events() -> Iterator[None]:
    """Store the events published inside in one INSERT when the block ends (call it inside a transaction:
    nothing is sent before the commit anyway). A block that raises stores nothing."""
    rows: list[Event] = []
    token = _batch.set(rows)
    try:
        yield
    finally:
        _batch.reset(token)
    if rows:
        events_store(rows=rows)


def publish_transient(event_type: str, payload: dict[str, Any], *, session_id: Any) -> None:
    """Send without storing (stream.chunk): losing one is harmless, the row holds the full content."""
    channel = session_channel(session_id)
    _send(group_name(channel), _wire({"type": event_type, "channel": channel, **payload}))
