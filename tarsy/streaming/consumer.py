"""WebSocket `/ws`: subscribe to `sessions` / `session:<id>`, catch up from `last_event_id`, ping/pong.

Transport only: authorisation in `connect`, group membership, forwarding.
"""

from __future__ import annotations

import re
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from tarsy.models import Event

from .publisher import SESSIONS_CHANNEL, event_message, group_name

CATCHUP_LIMIT = 200  # beyond this the client reloads over REST (catchup.overflow)
_CHANNEL_RE = re.compile(r"^(sessions|session:[0-9a-fA-F-]{36})$")


def _catchup(channel: str, last_event_id: int) -> tuple[list[dict[str, Any]], bool]:
    rows = list(Event.objects.filter(channel=channel, id__gt=last_event_id).order_by("id")[: CATCHUP_LIMIT + 1])
    if len(rows) > CATCHUP_LIMIT:
        return [], True
    return [event_message(r) for r in rows], False


class EventsConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        from .auth import websocket_allowed

        if not await database_sync_to_async(websocket_allowed)(self.scope):
            await self.close(code=4403)
            return
        self.channels_joined: set[str] = set()
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

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict):
            await self.send_json({"type": "error", "detail": "messages must be JSON objects"})
            return
        action = content.get("action") or content.get("type")
        channel = content.get("channel", "")
        if action == "ping":
            await self.send_json({"type": "pong"})
        elif action in ("subscribe", "unsubscribe", "catchup") and not _CHANNEL_RE.match(str(channel)):
            await self.send_json({"type": "subscription.error", "channel": channel,
                                  "detail": f"unknown channel; use {SESSIONS_CHANNEL!r} or 'session:<id>'"})
        elif action == "subscribe":
            await self.channel_layer.group_add(group_name(channel), self.channel_name)
            self.channels_joined.add(channel)
            await self.send_json({"type": "subscription.confirmed", "channel": channel})
            if content.get("last_event_id") is not None:
                await self._send_catchup(channel, content.get("last_event_id"))
        elif action == "unsubscribe":
            await self.channel_layer.group_discard(group_name(channel), self.channel_name)
            self.channels_joined.discard(channel)
            await self.send_json({"type": "subscription.removed", "channel": channel})
        elif action == "catchup":
            await self._send_catchup(channel, content.get("last_event_id"))
        else:
            await self.send_json({"type": "error", "detail": f"unknown action {action!r}"})

    async def _send_catchup(self, channel: str, last_event_id: Any) -> None:
        try:
            last = int(last_event_id or 0)
        except (TypeError, ValueError):
            await self.send_json({"type": "error", "detail": "last_event_id must be an integer"})
            return
        events, overflow = await database_sync_to_async(_catchup)(channel, last)
        if overflow:
            await self.send_json({"type": "catchup.overflow", "channel": channel, "last_event_id": last})
            return
        for event in events:
            await self.send_json(event)

    async def tarsy_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])
