"""The session page sees a hole in its channel's numbers, asks the socket to fill it, and takes every event once,
in order, without moving its cursor past the hole."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.db import connections, transaction

from tests.browser.conftest import open_page, wait_until
from tests.support.processes import wait_for

pytestmark = [pytest.mark.services, pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _store_unsent(session_id: str, statuses: list[str]) -> list[dict]:
    """Stored and numbered, never published (a worker that died before its publish); the messages as sent."""
    from tarsy.models import Event
    from tarsy.services.events import events_store
    from tarsy.streaming.publisher import event_message, session_channel

    rows = [Event(session_id=session_id, channel=session_channel(session_id), type="session.status",
                  payload={"session_id": session_id, "status": status}) for status in statuses]
    try:
        with transaction.atomic():
            events_store(rows=rows)
        return [json.loads(json.dumps(event_message(row), default=str)) for row in rows]
    finally:
        connections.close_all()


def store_unsent(session_id: str, statuses: list[str]) -> list[dict]:
    # Playwright's sync API keeps an event loop in this thread, where Django refuses ORM calls.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_store_unsent, session_id, statuses).result()


@pytest.mark.timeout(90)
def test_a_hole_in_the_numbers_is_filled_before_the_cursor_moves(scripted_config, web, browser):
    scripted_config({"KubernetesAgent": ["Final Answer: unused."]})
    base = web()
    session_id = httpx.post(f"{base}/api/v1/alerts", json={"data": "pod web-1 OOMKilled"},
                            timeout=10).json()["session_id"]
    channel = f"session:{session_id}"
    page = open_page(browser)
    sent: list[dict] = []
    received: list[dict] = []

    def watch(ws) -> None:
        ws.on("framesent", lambda payload: sent.append(json.loads(payload)))
        ws.on("framereceived", lambda payload: received.append(json.loads(payload)))

    page.on("websocket", watch)
    page.goto(f"{base}/sessions/{session_id}")
    cursor = int(page.eval_on_selector("#session-page", "el => el.dataset.cursor"))
    confirmed = {"type": "subscription.confirmed", "channel": channel}
    wait_for(lambda: page.evaluate("() => true") and confirmed in received, timeout=20, message="subscription")
    page.evaluate("""() => {
        const socket = window.tarsySocket, handler = socket.onEvent;
        window.__taken = [];
        socket.onEvent = (event) => { if (event.seq) window.__taken.push(event.seq); handler(event); };
    }""")

    missed = store_unsent(session_id, ["in_progress", "in_progress", "in_progress"])
    # Only the last one arrives live: the two before it were lost on the way.
    page.evaluate("(text) => window.tarsySocket.ws.onmessage({data: text})", json.dumps(missed[-1]))

    seqs = [m["seq"] for m in missed]
    wait_until(page, "(n) => window.__taken.length >= n", len(seqs))
    assert page.evaluate("window.__taken") == seqs  # each once, in order
    assert page.evaluate("(c) => window.tarsySocket.cursors[c]", channel) == missed[-1]["event_id"]
    asked = [m for m in sent if m.get("action") == "catchup"]
    assert asked == [{"action": "catchup", "channel": channel, "last_event_id": cursor}]  # from before the hole
    wait_until(page, "() => document.title.startsWith('●')")  # the page shows what the stored events say
    assert not page.problems, page.problems
