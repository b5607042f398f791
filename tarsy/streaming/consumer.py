"""WebSocket `/ws`: subscribe to `sessions` / `session:<id>`, catch up from `last_event_id`, ping/pong.

Transport only: authorisation in `connect`, subscriptions, forwarding. Live events do not pass through a
channel layer: the process's fan-out (fanout.py) writes each one to the subscribed sockets. Client messages are JSON
objects with an `action` (`subscribe`, `unsubscribe`, `catchup`, `ping`), a `channel` and optionally
`last_event_id`. A catch-up replays at most CATCHUP_LIMIT stored events; further behind, the client gets
`catchup.overflow` and reloads over REST (whose responses carry the `last_event_id` to continue from). A `catchup`
the client asked for ends with `catchup.done`.

Each socket gets each stored event of a channel once and in order. The socket remembers what it was sent on each
channel (`_Stream`); while a catch-up reads the database, live events wait for it, then pass the same check: on a
session channel by number (`seq`: an old one is dropped, a hole starts a catch-up), on `sessions` by id.

A message that is not such an object (binary, not JSON, too large, wrong types) gets an `error` frame naming the
problem, and the socket stays open: one bad message must not cost a dashboard its live updates.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from tarsy.selectors.events import (
    event_cursor,
    event_position,
    event_seq,
    events_after,
    events_after_seq,
    is_numbered,
    session_exists,
    sessions_last_numbers,
)

from .auth import websocket_allowed
from .fanout import Event, fanout_for_loop, use_number_reader
from .publisher import SESSIONS_CHANNEL, event_message

CATCHUP_LIMIT = 200  # beyond this the client reloads over REST (catchup.overflow)
use_number_reader(sessions_last_numbers)  # the fan-out's reconciliation reads the stored counters through us
REFUSED_CODE = 4403  # close code when auth or Origin refuse the connection
MAX_MESSAGE_CHARS = 4096  # a client message is a few dozen characters; past this it is garbage, not parsed
MAX_EVENT_ID = 2**63 - 1  # event ids are PostgreSQL bigints
_CHANNEL_RE = re.compile(r"(sessions|session:[0-9a-fA-F-]{36})")
ACTIONS = ("subscribe", "unsubscribe", "catchup", "ping")


class ClientMessage(BaseModel):
    """One message from a browser. `type` is accepted for `action`, as some clients name it."""

    model_config = ConfigDict(extra="ignore")

    action: StrictStr = Field(validation_alias=AliasChoices("action", "type"))
    channel: StrictStr = ""
    last_event_id: StrictInt | None = Field(default=None, ge=0, le=MAX_EVENT_ID)


def _client_message(content: Any) -> tuple[ClientMessage | None, str]:
    """The validated message, or None and what is wrong with it."""
    if not isinstance(content, dict):
        return None, "messages must be JSON objects"
    try:
        message = ClientMessage.model_validate(content)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "message"
        return None, f"{field}: {error['msg']}"
    if message.action not in ACTIONS:
        return None, f"unknown action {message.action[:40]!r}; use subscribe, unsubscribe, catchup or ping"
    return message, ""


Item = tuple[int | None, int | None, str]  # event id (None: transient), number (None: unnumbered), JSON text


@dataclass
class _Stream:
    """What one socket was sent on one channel."""

    last_id: int = 0  # the id of the last stored event sent (on `sessions`: the highest)
    last_seq: int | None = None  # session channels: its number (None: the next event sets it)
    held: list[Item] | None = None  # live events waiting for a catch-up under way
    catchups: int = 0  # catch-ups running or waiting (the last one to end releases the held events)
    replayed: set[int] = field(default_factory=set)  # `sessions`: ids a catch-up sent whose live copies may come
    hole_seen: int = 0  # the highest number that started a catch-up for a hole
    reading: asyncio.Lock = field(default_factory=asyncio.Lock)  # one catch-up at a time, each from the last end


def _catchup(channel: str, *, last_event_id: int = 0, after_seq: int | None = None) -> tuple[
        list[Item], bool, int, int | None]:
    """Stored events after a client's cursor or after a number, or overflow; then the channel's latest event id
    and the number the events follow (None if unknown)."""
    if after_seq is None and is_numbered(channel):
        after_seq = event_seq(channel, last_event_id) if last_event_id else 0
    if after_seq is not None:
        rows = events_after_seq(channel, seq=after_seq, limit=CATCHUP_LIMIT + 1)
    else:
        rows = events_after(channel, last_event_id=last_event_id, limit=CATCHUP_LIMIT + 1)
    if len(rows) > CATCHUP_LIMIT:
        return [], True, event_cursor(channel), after_seq
    items: list[Item] = [(row.id, row.seq, json.dumps(event_message(row), ensure_ascii=False, default=str))
                         for row in rows]
    return items, False, rows[-1].id if rows else 0, after_seq


def _channel_problem(channel: str) -> str | None:
    if not _CHANNEL_RE.fullmatch(channel):
        return f"unknown channel; use {SESSIONS_CHANNEL!r} or 'session:<id>'"
    if channel.startswith("session:"):
        try:
            session_id = uuid.UUID(channel.split(":", 1)[1])
        except ValueError:
            return "malformed session id"
        if not session_exists(session_id):
            return "session not found"
    return None


class EventsConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.streams: dict[str, _Stream] = {}  # the joined channels
        self._tasks: set[asyncio.Task] = set()  # catch-ups started by a hole (held here so they are not collected)
        self._counted = False
        if not await database_sync_to_async(websocket_allowed)(self.scope):
            await self.close(code=REFUSED_CODE)
            return
        await self.accept()
        await self.send_json({"type": "connection.established"})
        from tarsy.metrics import WS_CONNECTIONS

        WS_CONNECTIONS.inc()
        self._counted = True

    async def disconnect(self, code: int) -> None:
        for channel in tuple(getattr(self, "streams", {})):
            await fanout_for_loop().leave(channel, self)
        if getattr(self, "_counted", False):
            from tarsy.metrics import WS_CONNECTIONS

            WS_CONNECTIONS.dec()
            self._counted = False

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        """Channels' JSON consumer raises on a binary or non-JSON frame, which closes the socket: answer instead."""
        if text_data is None:
            await self._error("binary frames are not accepted; send JSON text")
        elif len(text_data) > MAX_MESSAGE_CHARS:
            await self._error(f"message too large (at most {MAX_MESSAGE_CHARS} characters)")
        else:
            try:
                content = json.loads(text_data)
            except (ValueError, RecursionError):
                await self._error("messages must be JSON")
                return
            await self.receive_json(content)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        message, problem = _client_message(content)
        if message is None:
            await self._error(problem)
            return
        action, channel = message.action, message.channel
        if action == "ping":
            await self.send_json({"type": "pong"})
        elif action == "unsubscribe":
            if self.streams.pop(channel, None) is not None:  # only validated channels were joined
                await fanout_for_loop().leave(channel, self)
            await self.send_json({"type": "subscription.removed", "channel": channel})
        elif problem := await database_sync_to_async(_channel_problem)(channel):
            await self.send_json({"type": "subscription.error", "channel": channel, "detail": problem})
        elif action == "subscribe":
            await self._subscribe(channel, message.last_event_id)
        else:
            await self._catch_up(channel, self.streams.get(channel), message.last_event_id or 0, answer=True)

    async def _error(self, detail: str) -> None:
        await self.send_json({"type": "error", "detail": detail})

    async def _subscribe(self, channel: str, last_event_id: int | None) -> None:
        # Join first, holding live events, then read where to start: nothing published in between is lost,
        # nothing is sent twice or out of order.
        stream = self.streams.get(channel)
        if stream is None:
            stream = self.streams[channel] = _Stream(held=[], catchups=1)
            await fanout_for_loop().join(channel, self)
            if last_event_id is None:  # from now on: the channel's latest event is where this socket stands
                stream.last_id, stream.last_seq = await database_sync_to_async(event_position)(channel)
            await self.send_json({"type": "subscription.confirmed", "channel": channel})
            await self._catch_up(channel, stream, last_event_id, joining=True)
        else:
            await self.send_json({"type": "subscription.confirmed", "channel": channel})
            if last_event_id is not None:
                await self._catch_up(channel, stream, last_event_id)

    # ---- catch-up ------------------------------------------------------------------------------------------

    def last_seq(self, channel: str) -> int | None:
        stream = self.streams.get(channel)
        return stream.last_seq if stream is not None else None

    async def resync(self, channel: str) -> None:
        """The fan-out's call after live events may have been lost: send what is stored after the last one sent."""
        stream = self.streams.get(channel)
        if stream is not None:
            await self._catch_up(channel, stream, None)

    async def _catch_up(self, channel: str, stream: _Stream | None, last_event_id: int | None, *,
                        answer: bool = False, joining: bool = False) -> None:
        """Send the stored events after the client's `last_event_id`, or (None) after the last one this socket
        was sent. Live events wait meanwhile, then pass the usual check."""
        if stream is None:  # a catch-up on a channel not joined: a plain replay
            await self._replay(channel, _Stream(), last_event_id or 0, answer)
            return
        if not joining:
            stream.catchups += 1
            if stream.held is None:
                stream.held = []
        try:
            if not joining or last_event_id is not None:
                async with stream.reading:
                    await self._replay(channel, stream, last_event_id, answer)
        finally:
            stream.catchups -= 1
        if stream.catchups == 0 and stream.held is not None:
            held, stream.held = stream.held, None
            await self._pass(channel, stream, held)

    async def _replay(self, channel: str, stream: _Stream, last_event_id: int | None, answer: bool) -> None:
        if last_event_id is None and stream.last_seq is not None:
            read = await database_sync_to_async(_catchup)(channel, after_seq=stream.last_seq)
        else:
            cursor = stream.last_id if last_event_id is None else last_event_id
            read = await database_sync_to_async(_catchup)(channel, last_event_id=cursor)
        items, overflow, latest, after_seq = read
        if stream.last_seq is None and after_seq is not None:  # a fresh stream from the client's cursor
            stream.last_id, stream.last_seq = last_event_id or 0, after_seq
        if overflow:
            cursor = stream.last_id if last_event_id is None else last_event_id
            await self.send_json({"type": "catchup.overflow", "channel": channel, "last_event_id": cursor,
                                  "latest_event_id": latest, "limit": CATCHUP_LIMIT})
            stream.last_id, stream.last_seq = await database_sync_to_async(event_position)(channel)
            return
        for event_id, seq, text in items:
            if seq is not None:
                if stream.last_seq is None or seq > stream.last_seq:
                    stream.last_id, stream.last_seq = event_id or 0, seq
            elif event_id is not None:  # `sessions`: a live copy of it may still be on its way
                stream.last_id = max(stream.last_id, event_id)
                stream.replayed.add(event_id)
                if len(stream.replayed) > 2 * CATCHUP_LIMIT:
                    stream.replayed.discard(min(stream.replayed))
            await self.send(text_data=text)
        if answer:
            await self.send_json({"type": "catchup.done", "channel": channel, "last_event_id": stream.last_id})

    # ---- live events -----------------------------------------------------------------------------------------

    async def deliver(self, channel: str, events: list[Event], first_seq: int | None = None) -> None:
        """Live events from the fan-out, already encoded: each sent as it is unless it was sent already."""
        stream = self.streams.get(channel)
        if stream is None:
            return
        items: list[Item] = [(event_id, None if first_seq is None or event_id is None else first_seq + n, text)
                             for n, (event_id, text) in enumerate(events)]
        if stream.held is not None:
            stream.held.extend(items)
        else:
            await self._pass(channel, stream, items)

    async def _pass(self, channel: str, stream: _Stream, items: list[Item]) -> None:
        """Send what this socket has not had. A hole in a session channel's numbers holds this and later events
        for a catch-up; a hole still there after a catch-up that began once its far side was seen is rows gone
        (retention), and is passed over."""
        for n, (event_id, seq, text) in enumerate(items):
            if event_id is None:
                await self.send(text_data=text)
            elif seq is not None:
                if stream.last_seq is not None and seq <= stream.last_seq:
                    continue  # sent already
                if stream.last_seq is not None and seq > stream.last_seq + 1 and seq > stream.hole_seen:
                    stream.hole_seen = seq  # every event numbered below it is committed: the database has it
                    stream.held = list(items[n:])
                    self._background(self.resync(channel))
                    return
                stream.last_id, stream.last_seq = event_id, seq
                await self.send(text_data=text)
            elif event_id in stream.replayed:
                stream.replayed.discard(event_id)
            else:
                stream.last_id = max(stream.last_id, event_id)
                await self.send(text_data=text)

    def _background(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
