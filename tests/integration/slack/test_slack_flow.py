"""Slack end to end: alert in over HTTP → real Celery worker → the fake Slack Web API (real HTTP on loopback)
sees the start message, its in-place updates, the summary in the thread, an occurrence in the thread and a
question asked from the thread answered by the chat agent; with Slack down the investigation still completes."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tarsy.models import SlackThread
from tarsy.services.intake.alerts import session_submit
from tests.support.processes import free_port, wait_for
from tests.support.sessions import wait_terminal
from tests.support.slack import mention_event, signed_headers, slack_section

pytestmark = [pytest.mark.services, pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(120)]

FINAL = "Thought: done.\nFinal Answer: {}"
SCRIPT = {
    "Collector": [{"text": FINAL.format("payments-api is OOMKilled at 256Mi."), "latency_ms": 1500}],
    "Reviewer": [{"text": FINAL.format("Raise the payments-api memory limit to 512Mi."), "latency_ms": 1500}],
    "executive_summary": ["payments-api is OOMKilled; raise its memory limit to 512Mi."],
    # The chat agent's answer carries a secret: LLM text is masked on its way to Slack.
    "ChatAgent": [FINAL.format("It was deployed at 09:12 with DB password=Sup3r-Secret-Value in its env.")],
}
TARSY = {
    "agents": {"Collector": {}, "Reviewer": {}},
    "agent_chains": {"two-step": {"alert_types": ["two-step"], "stages": [
        {"name": "collect", "agents": [{"name": "Collector"}]},
        {"name": "review", "agents": [{"name": "Reviewer"}]},
    ]}},
    "system": {"external_url": "https://tarsy.example.com"},
}


def _texts(message) -> str:
    """The mrkdwn of a message's sections (a recorded message, or one of its earlier versions)."""
    blocks = message["blocks"] if isinstance(message, dict) else message.blocks
    return "\n".join([b["text"]["text"] for b in blocks if b.get("type") == "section" and "text" in b]
                     + [f["text"] for b in blocks for f in b.get("fields", [])])


def test_a_session_lives_in_one_slack_message_and_its_thread(scripted_config, worker, fake_slack, slack_env):
    scripted_config(SCRIPT, tarsy={**TARSY, "slack": slack_section(fake_slack.url, update_interval="0.5s",
                                                                      users={"U0ALICE": "alice"})})
    fake_slack.rate_limit("chat.update", retry_after=1)  # the first in-place update is rate limited
    proc = worker()
    submitted = APIClient().post("/api/v1/alerts", {"alert_type": "two-step", "data": "payments-api OOMKilled"},
                                 format="json")
    assert submitted.status_code == 202
    session_id = submitted.json()["session_id"]
    (done,) = wait_terminal([session_id], 60, proc)
    assert done.status == "completed", done.error_message

    def summary_posted():
        roots = fake_slack.top_level()
        return roots and fake_slack.replies(roots[0].ts) and roots
    [root] = wait_for(summary_posted, timeout=20, message=f"the summary in the thread\n{proc.log()[-3000:]}")
    assert root.channel == "CALERTS"
    shown = [_texts(m) for m in [*root.edits, root]]
    assert "Investigating" in shown[0]  # posted when it started
    assert any("review (2/2)" in text for text in shown), shown  # updated in place as stages moved on
    assert "Completed" in shown[-1]
    limited, *updates = fake_slack.calls_to("chat.update")
    assert limited.status == 429 and updates[0].status == 200
    assert updates[0].at - limited.at >= 1.0  # Retry-After honoured
    assert all(c.body["ts"] == root.ts and c.ok for c in updates)
    [summary] = fake_slack.replies(root.ts)
    assert "raise its memory limit to 512Mi" in _texts(summary)
    assert f"https://tarsy.example.com/sessions/{session_id}" in summary.blocks[-1]["elements"][0]["text"]

    # The alert fires again: deduplication joins it to the session, and it goes into the same thread.
    again = APIClient().post("/api/v1/alerts", {"alert_type": "two-step", "data": "payments-api OOMKilled"},
                             format="json")
    assert again.status_code == 202 and again.json()["session_id"] == session_id, again.content
    wait_for(lambda: len(fake_slack.replies(root.ts)) == 2, timeout=20, message="the occurrence in the thread")
    assert "fired again" in _texts(fake_slack.replies(root.ts)[1])

    # A question mentioned in the thread is answered there by the chat agent, through the worker.
    event = mention_event(channel=root.channel, thread_ts=root.ts, text="<@U0TARSY> when was it deployed?")
    asked = Client(REMOTE_ADDR="203.0.113.7").post("/api/v1/slack/events", event, content_type="application/json",
                                                   **signed_headers(event))
    assert asked.status_code == 200
    wait_for(lambda: len(fake_slack.replies(root.ts)) == 3, timeout=30,
             message=f"the answer in the thread\n{proc.log()[-3000:]}")
    answer = _texts(fake_slack.replies(root.ts)[2])
    assert "when was it deployed?" in answer and "deployed at 09:12" in answer
    assert "Sup3r-Secret-Value" not in answer and "__MASKED_PASSWORD__" in answer
    assert not any("Sup3r-Secret-Value" in str(c.body) for c in fake_slack.calls)
    assert len(fake_slack.top_level()) == 1


def test_with_slack_down_the_investigation_still_completes(scripted_config, worker, slack_env):
    down = f"http://127.0.0.1:{free_port()}/api/"  # nothing listens there
    scripted_config(SCRIPT, tarsy={**TARSY, "slack": slack_section(down)})
    proc = worker()
    session = session_submit(alert_type="two-step", data="payments-api OOMKilled")
    (done,) = wait_terminal([session.id], 60, proc)
    assert done.status == "completed", done.error_message
    assert done.executive_summary == "payments-api is OOMKilled; raise its memory limit to 512Mi."
    thread = wait_for(lambda: SlackThread.objects.filter(session=done).exclude(last_error="").first(), timeout=20,
                      message="a recorded Slack failure")
    assert "Connection refused" in thread.last_error and thread.ts == ""
