"""The web process's fan-out: one Redis subscription per channel however many sockets watch it, every socket
gets each event, a socket that fails costs the others nothing, and the subscription ends with the last one."""

from __future__ import annotations

import asyncio
import json

import pytest
import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections

from tarsy.streaming.fanout import Fanout, by_channel, decode_events, encode_events, fanout_for_loop, redis_channel
from tests.integration.api.test_websocket_consumer import add_events, connect, new_session

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.timeout(30)]


@pytest.fixture(autouse=True)
async def _close_db():
    yield
    await sync_to_async(connections.close_all)()


def redis_subscribers(channel: str) -> int:
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        return dict(client.pubsub_numsub(redis_channel(channel)))[redis_channel(channel).encode()]
    finally:
        client.close()


async def subscribed_socket(channel: str):
    comm, connected, _ = await connect()
    assert connected
    await comm.receive_json_from()
    await comm.send_json_to({"action": "subscribe", "channel": channel})
    assert (await comm.receive_json_from())["type"] == "subscription.confirmed"
    return comm


async def test_many_sockets_share_one_subscription_and_all_get_every_event():
    session_id = await new_session()
    channel = f"session:{session_id}"
    sockets = [await subscribed_socket(channel) for _ in range(5)]
    assert redis_subscribers(channel) == 1
    ids = await add_events(session_id, 3)
    for comm in sockets:
        got = [(await comm.receive_json_from(timeout=5))["event_id"] for _ in ids]
        assert got == ids  # in publish order
    for comm in sockets[:-1]:
        await comm.disconnect()
    assert redis_subscribers(channel) == 1  # one socket still watches
    await sockets[-1].disconnect()
    assert redis_subscribers(channel) == 0


def test_the_events_of_one_commit_travel_as_one_message_per_channel_in_order():
    texts = [json.dumps({"type": "t", "text": "line one\nline two — ü"}, ensure_ascii=False), '{"type": "chunk"}']
    frames = [("session:a", 1, texts[0]), ("session:a", None, texts[1]), ("sessions", 2, texts[0]),
              ("session:a", 3, texts[1])]
    grouped = list(by_channel(frames))
    assert grouped == [("session:a", [(1, texts[0]), (None, texts[1])]), ("sessions", [(2, texts[0])]),
                       ("session:a", [(3, texts[1])])]
    for _, events in grouped:
        assert decode_events(encode_events(events)) == events


class _Sink:
    def __init__(self, fail: bool = False):
        self.fail, self.got = fail, []

    async def deliver(self, channel, events):
        if self.fail:
            raise ConnectionResetError("socket gone")
        self.got.extend(events)


async def test_a_failing_socket_is_dropped_and_the_others_still_get_the_event():
    fanout = Fanout()
    good, bad, other = _Sink(), _Sink(fail=True), _Sink()
    for sink in (good, bad, other):
        fanout._sinks.setdefault("sessions", set()).add(sink)  # local sinks only: no Redis needed here
    await fanout.deliver("sessions", [(7, '{"n": 1}')])
    await fanout.deliver("sessions", [(8, '{"n": 2}')])
    assert good.got == other.got == [(7, '{"n": 1}'), (8, '{"n": 2}')]
    assert bad not in fanout._sinks["sessions"]


async def test_embedded_hand_over_keeps_the_order_of_frames_from_another_thread():
    loop = asyncio.get_running_loop()
    fanout, sink = fanout_for_loop(loop), _Sink()
    fanout._sinks.setdefault("sessions", set()).add(sink)
    try:
        def worker_thread():
            for n in range(50):
                loop.call_soon_threadsafe(fanout.hand_over, [("sessions", n, str(n))])

        await loop.run_in_executor(None, worker_thread)
        for _ in range(100):
            if len(sink.got) == 50:
                break
            await asyncio.sleep(0.01)
        assert [event_id for event_id, _ in sink.got] == list(range(50))
    finally:
        fanout._sinks.pop("sessions", None)


def test_redis_down_never_fails_the_commit_and_the_event_is_still_stored(settings, monkeypatch):
    """Live delivery is best effort: the stored event (and catch-up) is the truth."""
    from django.db import transaction

    from tarsy.models import Event
    from tarsy.services.events import publish
    from tarsy.streaming import publisher

    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1 (the fixture restores it)
    monkeypatch.setattr(publisher, "_redis", None)
    monkeypatch.setattr(publisher, "_paused_until", 0.0)
    with transaction.atomic():
        [row] = publish("system.notice", {"n": 1})
    assert Event.objects.filter(id=row.id).exists()
    assert publisher._paused_until > 0  # later events skip the dead Redis instead of waiting on it
    monkeypatch.setattr(publisher, "_redis", None)
