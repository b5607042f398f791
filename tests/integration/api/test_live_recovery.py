"""Live delivery recovers by itself: events committed while Redis was away reach the sockets that stayed open,
in order and once, with no reload or reconnect of theirs. Redis here is the test's own, killed and restarted."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connections, transaction

from tarsy.models import Event
from tarsy.services.events import events_store, publish
from tarsy.streaming.fanout import fanout_for_loop
from tarsy.streaming.publisher import SESSIONS_CHANNEL, session_channel
from tests.integration.api.test_websocket_consumer import connect, new_session
from tests.support.processes import free_port, start_redis

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


@pytest.fixture(autouse=True)
async def _close_db():
    yield
    await sync_to_async(connections.close_all)()


@sync_to_async
def commit(session_id: str, n: int) -> list[tuple[int, int]]:
    """n events on the session's channel and on `sessions`, one transaction each: their (channel's, sessions')
    ids."""
    ids = []
    for i in range(n):
        with transaction.atomic():
            rows = publish("timeline_event.created", {"n": i}, session_id=session_id,
                           channels=[session_channel(session_id), SESSIONS_CHANNEL])
        ids.append((rows[0].id, rows[1].id))
    return ids


async def subscribed(channel: str):
    comm, connected, _ = await connect()
    assert connected
    await comm.receive_json_from()
    await comm.send_json_to({"action": "subscribe", "channel": channel})
    assert (await comm.receive_json_from())["type"] == "subscription.confirmed"
    return comm


async def received(comm, count: int, timeout: float) -> list[dict]:
    got = []
    deadline = asyncio.get_running_loop().time() + timeout
    while len(got) < count:
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            break
        try:
            got.append(await comm.receive_json_from(timeout=left))
        except TimeoutError:
            break
    return got


async def test_events_committed_while_redis_was_down_reach_open_sockets_in_order_once(tmp_path, settings):
    port = free_port()
    redis_procs = [start_redis(tmp_path, port)]
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    try:
        session_id = await new_session()
        channel = session_channel(session_id)
        watcher, board = await subscribed(channel), await subscribed(SESSIONS_CHANNEL)
        before = await commit(session_id, 1)
        first = await received(watcher, 1, 5)
        assert [e["event_id"] for e in first] == [before[0][0]]

        redis_procs[-1].kill()
        redis_procs[-1].stop()
        during = await commit(session_id, 3)  # the publish fails; the rows are stored
        await asyncio.sleep(1.0)
        redis_procs.append(await sync_to_async(start_redis)(tmp_path, port))
        after = await commit(session_id, 2)  # the worker may still hold back after its failure

        stored = before + during + after
        events = first + await received(watcher, len(stored) - 1, 20)
        assert [e["event_id"] for e in events] == [ids[0] for ids in stored]  # every stored event, in order, once
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(seqs[0], seqs[0] + len(stored)))
        assert await watcher.receive_nothing(timeout=1.0)
        on_board = [e["event_id"] for e in await received(board, len(stored), 20)]
        # The session's own creation, published on `sessions` as the board subscribed, may reach it after the
        # subscription (a loaded host): an event older than the test's first is not one of the test's.
        older = [event_id for event_id in on_board if event_id < stored[0][1]]
        on_board = on_board[len(older):] + [e["event_id"] for e in await received(board, len(older), 20)]
        assert on_board == [ids[1] for ids in stored]
        assert await board.receive_nothing(timeout=0.5)
        await watcher.disconnect()
        await board.disconnect()
    finally:
        for proc in redis_procs:
            proc.stop()


@sync_to_async
def store_unsent(session_id: str, n: int) -> list[int]:
    """Stored and numbered, never published: as when a worker dies right after its commit."""
    rows = [Event(session_id=session_id, channel=session_channel(session_id), type="timeline_event.created",
                  payload={"n": i}) for i in range(n)]
    with transaction.atomic():
        events_store(rows=rows)
    return [row.id for row in rows]


async def test_a_hole_in_a_session_channels_numbers_is_filled_from_the_database():
    session_id = await new_session()
    watcher = await subscribed(session_channel(session_id))
    unsent = await store_unsent(session_id, 2)
    live = [ids[0] for ids in await commit(session_id, 2)]
    events = await received(watcher, 4, 10)
    assert [e["event_id"] for e in events] == unsent + live
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[0]["seq"] + 4))
    assert await watcher.receive_nothing(timeout=0.5)
    await watcher.disconnect()


async def test_catch_ups_that_meet_send_each_event_once():
    """The subscription's return and a worker's notice can start two catch-ups of one socket at once."""
    session_id = await new_session()
    channel = session_channel(session_id)
    watcher = await subscribed(channel)
    unsent = await store_unsent(session_id, 3)
    fanout_for_loop().resync([channel, channel])
    events = await received(watcher, 3, 5)
    assert [e["event_id"] for e in events] == unsent
    assert await watcher.receive_nothing(timeout=1.0)  # and not again
    await watcher.disconnect()


async def test_a_sessions_last_events_left_unpublished_by_a_crash_reach_open_sockets(monkeypatch):
    """No later event of the session will show the hole: the fan-out's reconciliation sees the stored counter
    stand ahead of what the socket was sent, and catches it up."""
    from tarsy.streaming import fanout

    monkeypatch.setattr(fanout, "RECONCILE_S", 0.2)
    session_id = await new_session()
    watcher = await subscribed(session_channel(session_id))
    live = [ids[0] for ids in await commit(session_id, 1)]
    assert [e["event_id"] for e in await received(watcher, 1, 5)] == live
    unsent = await store_unsent(session_id, 2)
    events = await received(watcher, 2, 5)
    assert [e["event_id"] for e in events] == unsent
    assert events[1]["seq"] == events[0]["seq"] + 1
    assert await watcher.receive_nothing(timeout=1.0)  # and not again
    await watcher.disconnect()
