"""WebSocket `/ws`: subscribe to `sessions` / `session:<id>`, catch up from `last_event_id`, ping/pong.

Transport only: authorisation in `connect`, subscriptions, forwarding. Live events do not pass through a
channel layer: the process's fan-out (fanout.py) writes each one to the subscribed sockets. Client messages are JSON
objects with an `action` (`subscribe`, `unsubscribe`, `catchup`, `ping`), a `channel` and optionally
`last_event_id`. A catch-up replays at most CATCHUP_LIMIT stored events; further behind, the client gets
`catchup.overflow` and reloads over REST (whose responses carry the `last_event_id` to continue from).

A message that is not such an object (binary, not JSON, too large, wrong types) gets an `error` frame naming the
problem, and the socket stays open: one bad message must not cost a dashboard its live updates.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from tarsy.models import AlertSession, Event

from .auth import websocket_allowed
from .cursor import event_cursor
from .fanout import fanout_for_loop
from .publisher import SESSIONS_CHANNEL, event_message

CATCHUP_LIMIT = 200  # beyond this the client reloads over REST (catchup.overflow)
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


def _catchup(channel: str, last_event_id: int) -> tuple[list[dict[str, Any]], bool, int]:
    """Events after the cursor, or overflow; the third value is the channel's latest event id."""
    rows = list(Event.objects.filter(channel=channel, id__gt=last_event_id).order_by("id")[: CATCHUP_LIMIT + 1])
    if len(rows) > CATCHUP_LIMIT:
        return [], True, event_cursor(channel)
    return [event_message(r) for r in rows], False, rows[-1].id if rows else last_event_id


def _channel_problem(channel: str) -> str | None:
    if not _CHANNEL_RE.fullmatch(channel):
        return f"unknown channel; use {SESSIONS_CHANNEL!r} or 'session:<id>'"
    if channel.startswith("session:"):
        try:
            session_id = uuid.UUID(channel.split(":", 1)[1])
        except ValueError:
            return "malformed session id"
        if not AlertSession.objects.filter(id=session_id).exists():
            return "session not found"
    return None


class EventsConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        self.channels_joined: set[str] = set()
        self._replayed: dict[str, set[int]] = {}  # ids a catch-up sent, so queued live copies are not repeated
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
        for channel in getattr(self, "channels_joined", set()):
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
            if channel in self.channels_joined:  # only validated channels were joined
                await fanout_for_loop().leave(channel, self)
                self.channels_joined.discard(channel)
            await self.send_json({"type": "subscription.removed", "channel": channel})
        elif problem := await database_sync_to_async(_channel_problem)(channel):
            await self.send_json({"type": "subscription.error", "channel": channel, "detail": problem})
        elif action == "subscribe":
            await self._subscribe(channel, message.last_event_id)
        else:
            await self._send_catchup(channel, message.last_event_id or 0)

    async def _error(self, detail: str) -> None:
        await self.send_json({"type": "error", "detail": detail})

    async def _subscribe(self, channel: str, last_event_id: int | None) -> None:
        # Join first, then replay: nothing published in between is lost (duplicates are dropped in deliver).
        await fanout_for_loop().join(channel, self)
        self.channels_joined.add(channel)
        await self.send_json({"type": "subscription.confirmed", "channel": channel})
        if last_event_id is not None:
            await self._send_catchup(channel, last_event_id)

    async def _send_catchup(self, channel: str, last: int) -> None:
        events, overflow, latest = await database_sync_to_async(_catchup)(channel, last)
        if overflow:
            await self.send_json({"type": "catchup.overflow", "channel": channel, "last_event_id": last,
                                  "latest_event_id": latest, "limit": CATCHUP_LIMIT})
            return
        self._replayed[channel] = {e["event_id"] for e in events}
        for event in events:
            await self.send_json(event)

    async def deliver(self, channel: str, events: list[tuple[int | None, str]]) -> None:
        """Live events from the fan-out, already encoded: each sent as it is, unless catch-up sent it already."""
        replayed = self._replayed.get(channel)
        for event_id, text in events:
            if replayed and event_id in replayed:
                replayed.discard(event_id)
            else:
                await self.send(text_data=text)
