"""A large alert is stored once per session, not once per LLM call: every call of an execution sends the whole
conversation so far, and the debug record of each call keeps what was sent."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from tarsy.models import InteractionText, LLMInteraction
from tarsy.services.intake.alerts import session_submit
from tests.support.sessions import wait_terminal

LOOK = "Thought: the logs are long, look again.\nAction: none.none\nAction Input: {}"
FINAL = "Thought: enough.\nFinal Answer: checkout-api exhausts its connection pool under the burst."
SCRIPT = {"KubernetesAgent": [LOOK, LOOK, LOOK, FINAL], "executive_summary": ["The pool is exhausted."]}


def _alert_text(size: int) -> str:
    lines, n = [], 0
    while sum(map(len, lines)) < size:
        lines.append(f"2026-11-27T03:{n // 60 % 60:02d}:{n % 60:02d}Z checkout-api-7d9f pool wait {n * 37 % 9973} ms "
                     f"request {n:08x} upstream=payments-{n % 7}\n")
        n += 1
    return "".join(lines)


def _stored_bytes(sql: str, session_id) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, [str(session_id).replace("-", "") if connection.vendor == "sqlite" else session_id])
        return int(cursor.fetchone()[0] or 0)


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(180)
def test_a_1_mb_alert_is_stored_once_for_all_the_calls_of_its_session(scripted_config, worker):
    scripted_config(SCRIPT)
    alert = _alert_text(900_000)
    proc = worker(concurrency=1)
    session = session_submit(alert_type="kubernetes", data={"logs": alert})
    [done] = wait_terminal([session.id], 120, proc)
    assert done.status == "completed", done.error_message
    calls = LLMInteraction.objects.filter(session=done).count()
    assert calls >= 5  # four iterations and the executive summary

    conversations = _stored_bytes("SELECT SUM(LENGTH(CAST(conversation AS TEXT))) FROM tarsy_llminteraction "
                                  "WHERE session_id = %s", done.id)
    texts = _stored_bytes("SELECT SUM(LENGTH(text)) FROM tarsy_interactiontext WHERE session_id = %s", done.id)
    # Before: each of the four iterations kept its own copy of the alert (3.6 MB for a 0.9 MB alert).
    assert conversations < 100_000, conversations
    assert texts < 1.2 * len(alert), texts
    assert InteractionText.objects.filter(session=done).count() >= 1

    # Whoever reads a call sees the conversation as it was sent, the alert in full.
    body = APIClient(REMOTE_ADDR="127.0.0.1").get(f"/api/v1/sessions/{done.id}/interactions").json()
    first = body["llm_interactions"][0]["conversation"]
    user = next(message["content"] for message in first if message["role"] == "user")
    lines = alert.splitlines()
    assert len(user) > len(alert) * 0.9 and lines[0] in user and lines[-1] in user, user[:300]
    assert not any("content_ref" in message for call in body["llm_interactions"] for message in call["conversation"])
    page = Client(REMOTE_ADDR="127.0.0.1").get(f"/sessions/{done.id}/trace")
    assert page.status_code == 200
    assert lines[-1] in page.content.decode()


@pytest.mark.django_db
def test_calls_resending_a_long_text_share_one_copy_and_read_back_whole(client, django_user_model):
    """On either database: two calls resending one long tool result and an answer longer than the threshold."""
    from agents.context import LLMInteractionRecord
    from tarsy.selectors.conversations import llm_conversations
    from tarsy.services.interactions import SHARED_TEXT_OVER, llm_interaction_record

    session = session_submit(alert_type="kubernetes", data={"pod": "web-1"})
    tool = "x" * (SHARED_TEXT_OVER + 1)
    answer = "y" * (SHARED_TEXT_OVER * 2)
    sent = [{"role": "system", "content": "You are an SRE."}, {"role": "tool", "content": tool, "tool_name": "k.logs"}]
    for reply in ("short", answer):
        llm_interaction_record(session_id=session.id, execution_id=None, iteration=0, add_to_totals=True,
                               record=LLMInteractionRecord("executive_summary", "p", "m",
                                                           [*sent, {"role": "assistant", "content": reply}]))
    stored = list(LLMInteraction.objects.filter(session=session).order_by("id"))
    assert [[m.get("content_ref", "") != "" for m in row.conversation] for row in stored] == \
        [[False, True, False], [False, True, True]]
    assert sorted(len(t.text) for t in InteractionText.objects.filter(session=session)) == [len(tool), len(answer)]

    restored = llm_conversations(stored)
    assert [[m["content"] for m in row.conversation] for row in restored] == \
        [["You are an SRE.", tool, "short"], ["You are an SRE.", tool, answer]]
    assert restored[0].conversation[1] == {"role": "tool", "content": tool, "tool_name": "k.logs"}

    client.force_login(django_user_model.objects.create_superuser("admin", "admin@example.com", "pw"))
    page = client.get(f"/admin/tarsy/llminteraction/{stored[1].id}/change/").content.decode()
    assert answer in page and "content_ref" not in page
