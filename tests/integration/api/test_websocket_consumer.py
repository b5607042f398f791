"""The /ws consumer in-process (real database; live events over Redis with the services, else handed over in
process as in embedded mode): protocol, catch-up, admission."""

from __future__ import annotations

import io
import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.core.management import call_command
from django.db import connections

from tarsy.embedded import bind_publisher_to_running_loop
from tarsy.models import Event
from tarsy.services.events import publish
from tarsy.services.intake.alerts import session_submit
from tarsy.streaming.consumer import CATCHUP_LIMIT
from tarsy.streaming.routing import build_application
from tests.support.configdir import write_config

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(30)]

APP = build_application(None)


@pytest.fixture(autouse=True)
async def _close_db():
    yield
    await sync_to_async(connections.close_all)()


@pytest.fixture(autouse=True)
async def _live_events_to_this_loop():
    """Embedded mode hands live events to the server's loop, which `make run` binds before serving."""
    if settings.EMBEDDED:
        bind_publisher_to_running_loop()


async def connect(path="/ws", headers=None, client="127.0.0.1"):
    comm = WebsocketCommunicator(APP, path, headers=headers or [])
    comm.scope["client"] = (client, 50000)
    connected, code = await comm.connect(timeout=5)
    return comm, connected, code


@sync_to_async
def new_session():
    return str(session_submit(data="pod web-1 CrashLoopBackOff").id)


@sync_to_async
def add_events(session_id, n):
    return [publish("timeline_event.created", {"n": i}, session_id=session_id)[0].id for i in range(n)]


async def test_connection_ping_and_protocol_errors():
    comm, connected, _ = await connect()
    assert connected
    assert await comm.receive_json_from() == {"type": "connection.established"}
    await comm.send_json_to({"action": "ping"})
    assert await comm.receive_json_from() == {"type": "pong"}
    await comm.send_json_to({"action": "subscribe", "channel": "everything"})
    assert (await comm.receive_json_from())["type"] == "subscription.error"
    await comm.send_json_to({"action": "subscribe", "channel": "session:00000000-0000-0000-0000-000000000000"})
    error = await comm.receive_json_from()
    assert (error["type"], error["detail"]) == ("subscription.error", "session not found")
    await comm.send_json_to({"action": "dance"})
    assert (await comm.receive_json_from())["type"] == "error"
    await comm.send_json_to([1, 2])
    assert (await comm.receive_json_from())["detail"] == "messages must be JSON objects"
    await comm.disconnect()


async def test_subscriber_gets_live_events_and_unsubscribe_stops_them():
    session_id = await new_session()
    comm, _, _ = await connect()
    await comm.receive_json_from()
    channel = f"session:{session_id}"
    await comm.send_json_to({"action": "subscribe", "channel": channel})
    assert await comm.receive_json_from() == {"type": "subscription.confirmed", "channel": channel}
    [event_id] = await add_events(session_id, 1)
    live = await comm.receive_json_from(timeout=5)
    assert (live["type"], live["event_id"], live["channel"], live["n"]) == ("timeline_event.created", event_id,
                                                                            channel, 0)
    await comm.send_json_to({"action": "unsubscribe", "channel": channel})
    assert (await comm.receive_json_from())["type"] == "subscription.removed"
    await add_events(session_id, 1)
    assert await comm.receive_nothing(timeout=0.5)
    await comm.disconnect()


async def test_catchup_replays_exactly_the_missed_events_then_overflows_past_the_limit():
    session_id = await new_session()
    ids = await add_events(session_id, 5)
    comm, _, _ = await connect()
    await comm.receive_json_from()
    channel = f"session:{session_id}"
    await comm.send_json_to({"action": "subscribe", "channel": channel, "last_event_id": ids[1]})
    assert (await comm.receive_json_from())["type"] == "subscription.confirmed"
    replayed = [(await comm.receive_json_from())["event_id"] for _ in range(3)]
    assert replayed == ids[2:]
    assert await comm.receive_nothing(timeout=0.5)
    more = await add_events(session_id, CATCHUP_LIMIT)
    for _ in more:  # live copies of the new events
        await comm.receive_json_from(timeout=5)
    await comm.send_json_to({"action": "catchup", "channel": channel, "last_event_id": ids[1]})
    overflow = await comm.receive_json_from()
    assert overflow == {"type": "catchup.overflow", "channel": channel, "last_event_id": ids[1],
                        "latest_event_id": more[-1], "limit": CATCHUP_LIMIT}
    await comm.send_json_to({"action": "catchup", "channel": channel, "last_event_id": ids[-1]})
    replayed = [(await comm.receive_json_from())["event_id"] for _ in range(CATCHUP_LIMIT)]
    assert replayed == more  # exactly 200 behind still replays
    await comm.disconnect()
    assert await sync_to_async(Event.objects.filter(channel=channel).count)() == 1 + 5 + CATCHUP_LIMIT


async def test_disallowed_origin_is_refused(tmp_path):
    await sync_to_async(write_config)(tmp_path / "cfg", tarsy={"system": {
        "allowed_ws_origins": ["https://tarsy.example.com"]}})
    comm, connected, code = await connect(headers=[(b"origin", b"https://evil.example")])
    assert not connected and code == 4403
    comm, connected, _ = await connect(headers=[(b"origin", b"https://tarsy.example.com")])
    assert connected
    await comm.disconnect()


@pytest.mark.parametrize("host, origin, admitted", [
    ("localhost:8000", "http://localhost:8000", True),
    ("localhost:8000", "http://LOCALHOST:8000/", True),
    ("localhost:8000", "http://localhost:3000", False),  # another port: another site
    ("localhost:8000", "http://localhost", False),
    ("localhost:8000", "http://evil.example:8000", False),
    ("evil.example:8000", "http://evil.example:8000", False),  # same origin, but a Host ALLOWED_HOSTS refuses
])
async def test_a_browser_origin_must_be_tarsy_itself_host_and_port(settings, host, origin, admitted):
    settings.ALLOWED_HOSTS = ["localhost"]
    comm, connected, code = await connect(headers=[(b"host", host.encode()), (b"origin", origin.encode())])
    assert connected is admitted
    if admitted:
        await comm.disconnect()
    else:
        assert code == 4403


async def test_mode_none_refuses_remote_clients():
    _, connected, _ = await connect(client="10.9.8.7")
    assert not connected


async def test_token_mode_needs_a_valid_token(tmp_path):
    await sync_to_async(write_config)(tmp_path / "cfg", tarsy={"system": {"auth": {"mode": "token"}}})
    out = io.StringIO()
    await sync_to_async(call_command)("create_api_token", "browser-less", stdout=out)
    token = out.getvalue().strip()
    _, connected, _ = await connect(client="10.9.8.7")
    assert not connected
    _, connected, _ = await connect(path="/ws?token=wrong", client="10.9.8.7")
    assert not connected
    comm, connected, _ = await connect(path=f"/ws?token={token}", client="10.9.8.7")
    assert connected
    await comm.disconnect()
    comm, connected, _ = await connect(headers=[(b"authorization", f"Token {token}".encode())], client="10.9.8.7")
    assert connected
    await comm.disconnect()


@pytest.mark.parametrize("frame, detail", [
    ({"text_data": "not json"}, "messages must be JSON"),
    ({"text_data": "[" * 100_000}, "message too large (at most 4096 characters)"),
    ({"text_data": "[" * 4000 + "]" * 4000}, "message too large (at most 4096 characters)"),
    ({"text_data": "[" * 2000 + "]" * 2000}, "messages must be JSON"),  # deeper than the JSON decoder recurses
    ({"text_data": "[" * 500 + "]" * 500}, "messages must be JSON objects"),
    ({"text_data": '"subscribe"'}, "messages must be JSON objects"),
    ({"text_data": "null"}, "messages must be JSON objects"),
    ({"text_data": '{"action": "subscribe", "channel": "x' + "y" * 10_000 + '"}'},
     "message too large (at most 4096 characters)"),
    ({"bytes_data": b'{"action": "ping"}'}, "binary frames are not accepted; send JSON text"),
    ({"bytes_data": b"\xff\x00\xfe"}, "binary frames are not accepted; send JSON text"),
    ({"text_data": "{}"}, "action: Field required"),
    ({"text_data": '{"action": ["ping"]}'}, "action: Input should be a valid string"),
    ({"text_data": '{"action": "dance"}'}, "unknown action 'dance'; use subscribe, unsubscribe, catchup or ping"),
    ({"text_data": '{"action": "subscribe", "channel": 5}'}, "channel: Input should be a valid string"),
    ({"text_data": '{"action": "subscribe", "channel": "sessions", "last_event_id": "12"}'},
     "last_event_id: Input should be a valid integer"),
    ({"text_data": '{"action": "catchup", "channel": "sessions", "last_event_id": "\\u0661\\u0662"}'},
     "last_event_id: Input should be a valid integer"),
    ({"text_data": '{"action": "catchup", "channel": "sessions", "last_event_id": true}'},
     "last_event_id: Input should be a valid integer"),
    ({"text_data": '{"action": "catchup", "channel": "sessions", "last_event_id": 1.5}'},
     "last_event_id: Input should be a valid integer"),
    ({"text_data": '{"action": "catchup", "channel": "sessions", "last_event_id": Infinity}'},
     "last_event_id: Input should be a valid integer"),
    ({"text_data": '{"action": "catchup", "channel": "sessions", "last_event_id": -1}'},
     "last_event_id: Input should be greater than or equal to 0"),
    ({"text_data": '{"action": "catchup", "channel": "sessions", "last_event_id": 99999999999999999999}'},
     "last_event_id: Input should be less than or equal to 9223372036854775807"),
], ids=["not_json", "huge", "over_limit", "too_deep", "nested_list", "string", "null", "huge_channel", "bytes_json",
        "bytes_binary", "no_action", "action_list", "unknown_action", "channel_number", "cursor_string",
        "cursor_arabic_digits", "cursor_bool", "cursor_float", "cursor_infinity", "cursor_negative", "cursor_huge"])
async def test_a_bad_frame_gets_an_error_frame_and_the_socket_stays_open(frame, detail):
    comm, _, _ = await connect()
    await comm.receive_json_from()
    await comm.send_to(**frame)
    assert await comm.receive_json_from() == {"type": "error", "detail": detail}
    await comm.send_json_to({"action": "ping"})
    assert await comm.receive_json_from() == {"type": "pong"}
    await comm.disconnect()


@pytest.mark.parametrize("channel", ["bad name!", "session:\ud800"])
async def test_unsubscribing_from_a_channel_never_joined_is_harmless(channel):
    comm, _, _ = await connect()
    await comm.receive_json_from()
    await comm.send_to(text_data=json.dumps({"action": "unsubscribe", "channel": channel}))
    assert await comm.receive_json_from() == {"type": "subscription.removed", "channel": channel}
    await comm.send_json_to({"action": "subscribe", "channel": channel})
    assert (await comm.receive_json_from())["type"] == "subscription.error"
    await comm.send_json_to({"action": "ping"})
    assert await comm.receive_json_from() == {"type": "pong"}
    await comm.disconnect()
