"""Live fan-out in a web process: one subscription per channel, each event written to every local socket.

Channels' per-consumer path costs about 115 µs per frame per subscriber here: every consumer has its own
queue, decodes the layer's message itself and wakes through `await_many_dispatch`, which makes a new task
per message. A session watched by 100 browsers pays that 100 times per event. Instead, each web process holds
one Redis subscription per channel that has local subscribers, reads each frame once, and hands the event's
JSON (encoded once, by the publisher) to every local consumer in turn, which sends it through its ASGI `send`.
Channels still runs the protocol, the consumers and the auth.

A Redis message carries the events of one commit on one channel, as `<event_id>\\n<json>` lines (the id is
empty for transient events; JSON text has no raw newline): the consumer needs the id to drop a live copy of an
event its catch-up already sent, without parsing the JSON. On a session channel the message starts with a
`#<seq>` line, the number of its first event (the others follow on): the consumer sees a hole by it.
A one-event message reads the same in the earlier one-event format, so web processes roll out before workers.

Live delivery recovers by itself. When the subscription comes back after a Redis error, and when a worker says
(with a message of no events) that it could not publish some of a channel's events, every local socket of the
channel is caught up from the database from the last event it was sent (`Sink.resync`). A process that dies
between its commit and its publish says nothing: every RECONCILE_S the fan-out compares each watched session's
stored counter with the last number each socket was sent, and catches a socket up when the counter stands still
ahead of it (`_reconcile`).

One `Fanout` per event loop (`fanout_for_loop`): uvicorn runs one loop per process; tests run one per test.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from django.conf import settings

if TYPE_CHECKING:
    import redis.asyncio as redis
    from redis.asyncio.client import PubSub

log = logging.getLogger(__name__)

READ_TIMEOUT_S = 1.0  # how long the reader waits for a frame before re-checking that it still has channels
RETRY_DELAY_S = 0.5  # after a Redis error; redis-py reconnects and re-subscribes on the next read
RECONCILE_S = 5.0  # a session event stored but never published reaches its sockets within two of these

NumberReader = Callable[[list[str]], dict[str, int]]  # session ids -> the last number each gave an event
_number_reader: NumberReader | None = None


def use_number_reader(reader: NumberReader) -> None:
    """How the reconciliation reads the sessions' stored counters: given by the consumer module (the read side,
    tarsy.selectors.events), as the fan-out sits below it and imports none of it."""
    global _number_reader
    _number_reader = reader


Event = tuple[int | None, str]  # event id (None: transient), JSON text


class Sink(Protocol):
    """A local subscriber (the WebSocket consumer)."""

    async def deliver(self, channel: str, events: list[Event], first_seq: int | None = None) -> None: ...

    async def resync(self, channel: str) -> None:
        """Send what the database holds after the last event sent on `channel` (live events may have been lost)."""

    def last_seq(self, channel: str) -> int | None:
        """The number of the last event of a session channel sent (None before the first)."""


def redis_channel(channel: str) -> str:
    return f"{settings.EVENTS_PREFIX}:events:{channel}"


def by_channel(frames: Iterable[tuple[str, int | None, str]]) -> Iterator[tuple[str, list[Event]]]:
    """Consecutive (channel, event id, text) frames grouped by channel, in order."""
    for channel, group in itertools.groupby(frames, key=lambda frame: frame[0]):
        yield channel, [(event_id, text) for _, event_id, text in group]


def seq_of_first(events: list[Event], seqs: dict[int, int]) -> int | None:
    """The number of the first of a channel's events, from the numbers of the stored ones by id."""
    event_id = events[0][0] if events else None
    return None if event_id is None else seqs.get(event_id)


def encode_events(events: list[Event], first_seq: int | None = None) -> bytes:
    """One message; `first_seq` is the number of the first event on a session channel. No events: a notice that
    some of the channel's events were not published."""
    body = "\n".join(f"{'' if event_id is None else event_id}\n{text}" for event_id, text in events)
    return (body if first_seq is None else f"#{first_seq}\n{body}").encode()


def decode_message(message: bytes) -> tuple[int | None, list[Event]]:
    """The number of the first event (None if unnumbered) and the events."""
    if not message:
        return None, []
    lines = message.decode().split("\n")
    first_seq = int(lines.pop(0)[1:]) if lines[0].startswith("#") else None
    events = [(int(head) if head else None, text) for head, text in zip(lines[::2], lines[1::2], strict=True)]
    return first_seq, events


def decode_events(message: bytes) -> list[Event]:
    return decode_message(message)[1]


class Fanout:
    """The subscriptions of one web process (one event loop)."""

    def __init__(self) -> None:
        self._sinks: dict[str, set[Sink]] = {}
        self._subscribed: set[str] = set()  # channels subscribed on Redis
        self._client: redis.Redis | None = None
        self._pubsub: PubSub | None = None
        self._reader: asyncio.Task | None = None
        self._lock = asyncio.Lock()  # subscribe/unsubscribe commands one at a time
        self._local: asyncio.Queue | None = None  # embedded mode: frames handed over by the in-process worker
        self._resyncs: set[asyncio.Task] = set()  # catch-ups under way (held here so they are not collected)
        self._stored: dict[str, int] = {}  # session channel -> its counter at the previous reconciliation
        self._reconciler: asyncio.Task | None = None

    async def join(self, channel: str, sink: Sink) -> None:
        """Deliver `channel`'s events to `sink` from now on (subscribed on Redis before this returns)."""
        self._sinks.setdefault(channel, set()).add(sink)
        if settings.REDIS_URL:
            async with self._lock:  # a second subscriber waits until the first one's SUBSCRIBE is done
                if channel not in self._subscribed:
                    await self._redis_subscribe(channel)

    async def leave(self, channel: str, sink: Sink) -> None:
        sinks = self._sinks.get(channel)
        if not sinks or sink not in sinks:
            return
        sinks.discard(sink)
        if not sinks:
            del self._sinks[channel]
            if settings.REDIS_URL:
                async with self._lock:
                    if channel in self._subscribed and not self._sinks.get(channel):
                        await self._redis_unsubscribe(channel)

    async def deliver(self, channel: str, events: list[Event], first_seq: int | None = None) -> None:
        """Write events (in order) to every local subscriber of `channel`, in subscription-independent order. A
        socket that fails is dropped; the others still get the events."""
        sinks = self._sinks.get(channel)
        if not sinks:
            return
        for sink in tuple(sinks):
            try:
                if first_seq is None:
                    await sink.deliver(channel, events)
                else:
                    await sink.deliver(channel, events, first_seq)
            except Exception:  # a socket closing under us; its consumer's disconnect leaves properly
                log.debug("dropping a subscriber of %s after a failed write", channel, exc_info=True)
                self._sinks.get(channel, set()).discard(sink)

    # ---- embedded mode: frames from a thread of this process ---------------------------------------------

    def resync(self, channels: Iterable[str]) -> None:
        """Catch every local socket of `channels` up from the database, each in a task of its own (a socket's
        live events wait for its catch-up; the reader and the other sockets do not)."""
        for channel in channels:
            for sink in tuple(self._sinks.get(channel, ())):
                self._start_resync(sink, channel)

    def _start_resync(self, sink: Sink, channel: str) -> None:
        task = asyncio.get_running_loop().create_task(sink.resync(channel))
        self._resyncs.add(task)
        task.add_done_callback(self._resyncs.discard)

    def hand_over(self, frames: list[tuple[str, int | None, str]], seqs: dict[int, int] | None = None) -> None:
        """Called on this loop (via call_soon_threadsafe): queue frames for delivery, in order. `seqs` numbers
        the events of session channels by id."""
        if self._local is None:
            self._local = asyncio.Queue()
            asyncio.get_running_loop().create_task(self._drain_local(self._local))
        self._local.put_nowait((frames, seqs or {}))

    async def _drain_local(self, queue: asyncio.Queue) -> None:
        while True:
            frames, seqs = await queue.get()
            for channel, events in by_channel(frames):
                await self.deliver(channel, events, seq_of_first(events, seqs))

    # ---- Redis --------------------------------------------------------------------------------------------

    async def _redis_subscribe(self, channel: str) -> None:
        if self._pubsub is None:
            import redis.asyncio as redis

            self._client = redis.Redis.from_url(settings.REDIS_URL)
            self._pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        await self._pubsub.subscribe(redis_channel(channel))
        self._subscribed.add(channel)
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(self._read())
        if self._reconciler is None or self._reconciler.done():
            self._reconciler = asyncio.get_running_loop().create_task(self._reconcile_every(RECONCILE_S))

    async def _redis_unsubscribe(self, channel: str) -> None:
        self._subscribed.discard(channel)
        if self._pubsub is None:
            return
        await self._pubsub.unsubscribe(redis_channel(channel))
        self._stored.pop(channel, None)
        if not self._subscribed:  # nobody left: let the reader end and close the connection
            for task in (self._reader, self._reconciler):
                if task is not None:
                    task.cancel()
            self._reader = self._reconciler = None
            pubsub, client, self._pubsub, self._client = self._pubsub, self._client, None, None
            await pubsub.aclose()
            if client is not None:
                await client.aclose()

    async def _read(self) -> None:
        """The one reader of this process: each frame is decoded once, then written to the local sockets."""
        prefix = redis_channel("")
        lost = False  # the subscription broke: events published meanwhile never reached this process
        while self._pubsub is not None:  # cancelled when the last channel is unsubscribed
            pubsub = self._pubsub
            try:
                if lost:
                    # redis-py reconnects and re-subscribes before the PING: once it answers, every event
                    # published from now on arrives, and the database holds every earlier one.
                    await pubsub.ping()
                    lost = False
                    log.info("live event subscription restored; catching sockets up from the database")
                    self.resync(tuple(self._sinks))
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=READ_TIMEOUT_S)
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis restarting: retried until it answers, then every socket catches up
                if not lost:
                    log.warning("live event subscription failed; retrying until Redis answers", exc_info=True)
                lost = True
                await asyncio.sleep(RETRY_DELAY_S)
                continue
            if message is None or message.get("type") != "message":
                continue
            channel = message["channel"].decode()[len(prefix):]
            seq, events = decode_message(message["data"])
            if events:
                await self.deliver(channel, events, seq)
            else:  # a worker could not publish some of this channel's events
                self.resync((channel,))


    async def _reconcile_every(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self._reconcile()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database is away: the next round
                log.warning("live event reconciliation failed; retrying in %.0f s", interval, exc_info=True)

    async def _reconcile(self) -> None:
        """Catch up the sockets of watched session channels that were sent less than is stored, where the stored
        counter has not moved since the previous round (a counter still moving may have its publish on the way)."""
        from asgiref.sync import sync_to_async

        reader = _number_reader
        if reader is None:
            return
        channels = {channel[len("session:"):]: channel for channel in self._sinks if channel.startswith("session:")}
        stored = {channels[s]: n for s, n in (await sync_to_async(reader)(list(channels))).items()}
        behind = [(channel, sink) for channel, last in stored.items() if last == self._stored.get(channel)
                  for sink in tuple(self._sinks.get(channel, ())) if (sink.last_seq(channel) or 0) < last]
        self._stored = stored
        if behind:
            log.info("catching up %d socket(s) sent less than is stored", len(behind))
        for channel, sink in behind:
            self._start_resync(sink, channel)


_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Fanout] = weakref.WeakKeyDictionary()


def fanout_for_loop(loop: asyncio.AbstractEventLoop | None = None) -> Fanout:
    loop = loop or asyncio.get_running_loop()
    fanout = _by_loop.get(loop)
    if fanout is None:
        fanout = _by_loop[loop] = Fanout()
    return fanout
