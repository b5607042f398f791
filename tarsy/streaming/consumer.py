"""WebSocket `/ws`: subscribe to `sessions` / `session:<id>`, catch up from `last_event_id`, ping/pong.

Transport only: authorisation in `connect`, group membership, forwarding. Client messages are JSON
objects with an `action` (`subscribe`, `unsubscribe`, `catchup`, `ping`), a `channel` and optionally
`last_event_id`. A catch-up replays at most CATCHUP_LIMIT stored events; further behind, the client gets
`catchup.overflow` and reloads over REST (whose responses carry the `last_event_id` to continue from).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.db.models import Max

from tarsy.models import AlertSession, Event

from .publisher import SESSIONS_CHANNEL, event_message, group_name

CATCHUP_LIMIT = 200  # beyond this the client reloads over REST (catchup.overflow); ANCHORS: 200
REFUSED_CODE = 4403  # close code when auth or Origin refuse the connection
_CHANNEL_RE = re.compile(r"^(sessions|session:[0-9a-fA-F-]{36})$")


def _catchup(channel: str, last_event_id: int) -> tuple[list[dict[str, Any]], bool, int]:
    """Events after the cursor, or overflow; the third value is the channel's latest event id."""
    rows = list(Event.objects.filter(channel=channel, id__gt=last_event_id).order_by("id")[: CATCHUP_LIMIT + 1])
    if len(rows) > CATCHUP_LIMIT:
        latest = Event.objects.filter(channel=channel).aggregate(m=Max("id"))["m"] or 0
        return [], True, latest
    return [event_message(r) for r in rows], False, rows[-1].id if rows else last_event_id


def _channel_problem(channel: str) -> str | None:
    if not _CHANNEL_RE.match(channel):
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
        from .auth import websocket_allowed

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
            await self.channel_layer.group_discard(group_name(channel), self.channel_name)
        if getattr(self, "_counted", False):
            from tarsy.metrics import WS_CONNECTIONS

            WS_CONNECTIONS.dec()
            self._counted = False

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict):
            await self.send_json({"type": "error", "detail": "messages must be JSON objects"})
            return
        action = content.get("action") or content.get("type")
        channel = str(content.get("channel", ""))
        if action == "ping":
            await self.send_json({"type": "pong"})
        elif action in ("subscribe", "catchup"):
            problem = await database_sync_to_async(_channel_problem)(channel)
            if problem:
                await self.send_json({"type": "subscription.error", "channel": channel, "detail": problem})
            elif action == "subscribe":
                await self._subscribe(channel, content.get("last_event_id"))
            else:
                await self._send_catchup(channel, content.get("last_event_id"))
        elif action == "unsubscribe":
            await self.channel_layer.group_discard(group_name(channel), self.channel_name)
            self.channels_joined.discard(channel)
            await self.send_json({"type": "subscription.removed", "channel": channel})
        else:
            await self.send_json({"type": "error", "detail": f"unknown action {action!r}; "
                                                             "use subscribe, unsubscribe, catchup or ping"})

    async def _subscribe(self, channel: str, last_event_id: Any) -> None:
        # Join first, then replay: nothing published in between is lost (duplicates are dropped in tarsy_event).
        await self.channel_layer.group_add(group_name(channel), self.channel_name)
        self.channels_joined.add(channel)
        await self.send_json({"type": "subscription.confirmed", "channel": channel})
        if last_event_id is not None:
            await self._send_catchup(channel, last_event_id)

    async def _send_catchup(self, channel: str, last_event_id: Any) -> None:
        try:
            last = int(last_event_id or 0)
        except (TypeError, ValueError):
            await self.send_json({"type": "error", "detail": "last_event_id must be an integer"})
            return
        events, overflow, latest = await database_sync_to_async(_catchup)(channel, last)
        if overflow:
            await self.send_json({"type": "catchup.overflow", "channel": channel, "last_event_id": last,
                                  "latest_event_id": latest, "limit": CATCHUP_LIMIT})
            return
        self._replayed[channel] = {e["event_id"] for e in events}
        for event in events:
            await self.send_json(event)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels runs close_old_connections() before every handler: a hop to asgiref's one shared thread,
        # per message and per consumer. For events that is most of the fan-out's cost, and all consumers of a
        # process queue behind each other on that thread (100 subscribers: p50 ~30 ms more). Forwarding an
        # event touches no database; the handlers that do use database_sync_to_async, which closes stale
        # connections itself. So events skip the hop; every other message keeps Channels' behaviour.
        if message.get("type") == "tarsy.event":
            await self.tarsy_event(message)
        else:
            await super().dispatch(message)

    async def tarsy_event(self, message: dict[str, Any]) -> None:
        replayed = self._replayed.get(message.get("channel", ""))
        if replayed and message.get("event_id") in replayed:
            replayed.discard(message["event_id"])
            return
        await self.send(text_data=message["text"])  # encoded once by the publisher
