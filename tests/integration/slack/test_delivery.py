"""Delivering a session's Slack message and thread against the wire-level fake Slack Web API, in this process
(the flow through a real worker is in test_slack_flow.py): in-place updates, the throttle, thread replies,
masking and escaping, Retry-After, outages and bounded retries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from tarsy.metrics import SLACK_CALLS, SLACK_DROPPED
from tarsy.models import AlertSession, SlackPost, SlackThread
from tarsy.services import sessions, stages
from tarsy.services.intake.alerts import session_receive, session_submit
from tarsy.services.queue import session_claim
from tarsy.signals import alert_attached
from tarsy.slack.delivery import MAX_FAILURES, deliver
from tests.support.processes import free_port
from tests.support.slack import blocks_text, slack_section

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]

SCRIPT = {"KubernetesAgent": [{"text": "Final Answer: done"}]}
TWO_STAGES = {"agent_chains": {"kubernetes": {"alert_types": ["kubernetes"], "stages": [
    {"name": "analysis", "agents": [{"name": "KubernetesAgent"}]},
    {"name": "review", "agents": [{"name": "KubernetesAgent"}]}]}}}


@pytest.fixture
def configure(scripted_config, fake_slack, slack_env):
    def make(**slack):
        return scripted_config(SCRIPT, tarsy={**TWO_STAGES, "system": {"external_url": "https://tarsy.example.com/"},
                                              "slack": slack_section(fake_slack.url, **slack)})
    return make


def _started(data: str = "pod web-1 CrashLoopBackOff") -> AlertSession:
    session = session_submit(data=data, severity="critical")
    assert session_claim(session=session, worker_id="w1", now=timezone.now())
    return session




def test_the_message_is_posted_once_updated_in_place_and_the_end_goes_into_its_thread(configure, fake_slack):
    configure(update_interval="30s")
    session = _started()
    assert deliver(session_id=session.id) is None
    [root] = fake_slack.top_level()
    assert root.channel == "CALERTS" and "Investigating" in blocks_text(root.blocks)
    thread = SlackThread.objects.get(session=session)
    assert (thread.channel, thread.ts) == ("CALERTS", root.ts)  # the ID Slack answered, for replies to find it

    stages.stage_start_chain(session=session, chain_stage_index=1)
    wait = deliver(session_id=session.id)  # just posted: the throttle holds the update back
    assert wait is not None and 25 < wait <= 30
    assert not fake_slack.calls_to("chat.update")
    SlackThread.objects.filter(session=session).update(shown_at=timezone.now() - timedelta(seconds=30))  # time passes
    assert deliver(session_id=session.id) is None
    assert "review (2/2)" in blocks_text(root.blocks)
    assert len(fake_slack.calls_to("chat.update")) == 1

    sessions.session_set_status(session_id=session.id, status="completed", from_statuses=("in_progress",),
                                final_analysis="web-1 lacks its config map", executive_summary="Config map missing.")
    assert deliver(session_id=session.id) is None  # the end is shown at once, throttle or not
    text = blocks_text(root.blocks)
    assert "Completed" in text and "https://tarsy.example.com/sessions/" not in text  # the link is a button
    assert root.blocks[-2]["elements"][0]["url"] == f"https://tarsy.example.com/sessions/{session.id}"
    [summary] = fake_slack.replies(root.ts)
    assert "Config map missing." in blocks_text(summary.blocks)
    assert f"<https://tarsy.example.com/sessions/{session.id}|Open in TARSy>" in blocks_text(summary.blocks)
    assert len(fake_slack.top_level()) == 1
    assert deliver(session_id=session.id) is None and len(fake_slack.calls) == 4  # nothing left: no call


def test_a_failure_is_posted_with_its_reason(configure, fake_slack):
    configure()
    session = _started()
    sessions.session_set_status(session_id=session.id, status="failed", from_statuses=("in_progress",),
                                error_message="Stage 'analysis' failed: LLM quota exhausted")
    assert deliver(session_id=session.id) is None
    [root] = fake_slack.top_level()
    assert "Failed" in blocks_text(root.blocks) and "LLM quota exhausted" in blocks_text(root.blocks)
    [reply] = fake_slack.replies(root.ts)
    assert "Investigation failed" in blocks_text(reply.blocks) and "LLM quota exhausted" in blocks_text(reply.blocks)


def test_attached_alerts_go_into_the_thread_masked_and_unable_to_ping_the_channel(configure, fake_slack):
    configure()
    session = _started()
    with transaction.atomic():
        alert_attached.send(sender=AlertSession, session=session, kind="occurrence",
                            data="pod web-1 restarted <!channel> password=hunter2-Secret-Value")
        alert_attached.send(sender=AlertSession, session=session, kind="related", data="pod web-2 OOMKilled")
    deliver(session_id=session.id)
    [root] = fake_slack.top_level()
    occurrence, related = fake_slack.replies(root.ts)
    text = blocks_text(occurrence.blocks)
    assert "fired again" in text and "&lt;!channel&gt;" in text and "<!channel>" not in text
    assert "hunter2" not in text and "__MASKED_PASSWORD__" in text
    assert not any("<!channel>" in str(c.body) or "hunter2" in str(c.body) for c in fake_slack.calls)
    assert "related alert" in blocks_text(related.blocks) and "web-2 OOMKilled" in blocks_text(related.blocks)


def test_a_short_retry_after_is_waited_out_in_the_call(configure, fake_slack):
    configure()
    session = _started()
    fake_slack.rate_limit("chat.postMessage", retry_after=1)
    assert deliver(session_id=session.id) is None
    limited, posted = fake_slack.calls_to("chat.postMessage")
    assert (limited.status, posted.status) == (429, 200)
    assert posted.at - limited.at >= 1.0
    assert len(fake_slack.top_level()) == 1


def test_a_long_retry_after_is_scheduled_and_nothing_is_called_before_it(configure, fake_slack):
    configure()
    session = _started()
    fake_slack.rate_limit("chat.postMessage", retry_after=30)
    assert deliver(session_id=session.id) == 30.0
    thread = SlackThread.objects.get(session=session)
    assert thread.failures == 1 and "ratelimited" in thread.last_error
    assert thread.retry_at - timezone.now() > timedelta(seconds=28)
    assert deliver(session_id=session.id) is None  # too early: no call at all
    assert len(fake_slack.calls) == 1
    SlackThread.objects.filter(session=session).update(retry_at=timezone.now())  # Retry-After has passed
    assert deliver(session_id=session.id) is None
    assert len(fake_slack.top_level()) == 1 and SlackThread.objects.get(session=session).failures == 0


def test_slack_unreachable_is_retried_with_backoff_then_given_up_and_counted(scripted_config, slack_env):
    down = f"http://127.0.0.1:{free_port()}/api/"  # nothing listens there
    scripted_config(SCRIPT, tarsy={"slack": slack_section(down)})
    session = _started()
    alert_attached.send(sender=AlertSession, session=session, kind="occurrence", data="again")
    unreachable = SLACK_CALLS.labels("chat.postMessage", "unreachable")
    dropped = SLACK_DROPPED.labels("retries_exhausted")
    calls_before, dropped_before = unreachable._value.get(), dropped._value.get()
    delays = []
    for _ in range(MAX_FAILURES):
        delays.append(deliver(session_id=session.id))
        SlackThread.objects.filter(session=session).update(retry_at=timezone.now())  # skip the wait
    assert delays == [2.0, 4.0, 8.0, 16.0, None]  # exponential backoff, then given up
    assert unreachable._value.get() - calls_before == MAX_FAILURES
    assert dropped._value.get() - dropped_before == 2  # the message and the reply
    thread = SlackThread.objects.get(session=session)
    assert thread.ts == "" and thread.failures == 0 and "Connection refused" in thread.last_error
    assert SlackPost.objects.get(thread=thread).dropped_at is not None
    assert deliver(session_id=session.id) is None and unreachable._value.get() - calls_before == MAX_FAILURES
    assert AlertSession.objects.get(id=session.id).status == "in_progress"  # the session never noticed


def test_an_error_no_retry_can_fix_is_given_up_at_once(configure, fake_slack):
    configure()
    session = _started()
    fake_slack.fail("chat.postMessage", "channel_not_found")
    assert deliver(session_id=session.id) is None
    assert "channel_not_found" in SlackThread.objects.get(session=session).last_error
    assert len(fake_slack.calls) == 1


def test_a_slack_outage_answering_503_is_retried_later(configure, fake_slack):
    configure()
    session = _started()
    fake_slack.outage = True
    assert deliver(session_id=session.id) == 2.0
    assert [c.status for c in fake_slack.calls] == [503, 503]  # the SDK's one retry of a server error
    fake_slack.outage = False
    SlackThread.objects.filter(session=session).update(retry_at=timezone.now())
    assert deliver(session_id=session.id) is None and len(fake_slack.top_level()) == 1


def test_without_slack_configured_nothing_is_recorded(scripted_config):
    scripted_config(SCRIPT)
    session = _started()
    assert not SlackThread.objects.filter(session=session).exists()
    assert deliver(session_id=session.id) is None


def test_a_resolution_from_the_monitoring_source_goes_into_the_thread(configure, fake_slack):
    from tarsy.intake.items import Resolved
    from tarsy.services.intake.deliveries import session_resolve_alert

    configure()
    session = session_receive(data="pod web-1 CrashLoopBackOff", fingerprint="fp-web-1").session
    assert session_claim(session=session, worker_id="w1", now=timezone.now())
    queued = session_receive(data="pod other CrashLoopBackOff", fingerprint="fp-other").session
    assert session_resolve_alert(source="alertmanager", resolution=Resolved("fp-web-1", "2026-11-23T12:00:00Z"))[
        "action"] == "annotated"
    assert session_resolve_alert(source="alertmanager", resolution=Resolved("fp-other"))["action"] == "cancelled"
    deliver(session_id=session.id)
    [root] = fake_slack.top_level()  # the queued one never started: no message for it
    [resolved] = fake_slack.replies(root.ts)
    assert "Alert resolved in alertmanager at 2026-11-23T12:00:00Z" in blocks_text(resolved.blocks)
    assert not SlackThread.objects.filter(session=queued).exists()


def test_work_whose_task_was_lost_is_found_again_and_only_that(configure, fake_slack):
    from tarsy.services.slack import slack_threads_stalled

    configure()
    behind, leased, backing_off, done = (_started() for _ in range(4))
    deliver(session_id=done.id)
    now = timezone.now()
    SlackThread.objects.filter(session=leased).update(lease_until=now + timedelta(seconds=60))
    SlackThread.objects.filter(session=backing_off).update(retry_at=now + timedelta(seconds=60))
    assert slack_threads_stalled(now=now) == [behind.id]
    SlackThread.objects.filter(session=leased).update(lease_until=now - timedelta(seconds=1))  # its worker died
    assert set(slack_threads_stalled(now=now)) == {behind.id, leased.id}
    alert_attached.send(sender=AlertSession, session=done, kind="occurrence", data="again")  # a reply waits
    assert set(slack_threads_stalled(now=now)) == {behind.id, leased.id, done.id}


def test_a_storm_of_repeats_becomes_one_reply_per_interval(configure, fake_slack):
    configure(update_interval="30s")
    session = _started()

    def fire(n: int) -> None:
        for i in range(n):
            alert_attached.send(sender=AlertSession, session=session, kind="occurrence", data=f"web-1 down #{i}")

    fire(1)
    assert deliver(session_id=session.id) is None
    [root] = fake_slack.top_level()
    fire(100)
    assert SlackPost.objects.filter(thread_id=session.id).count() == 2  # the storm waits as one reply
    wait = deliver(session_id=session.id)
    assert wait is not None and 0 < wait <= 30 and len(fake_slack.replies(root.ts)) == 1
    SlackPost.objects.filter(thread_id=session.id).update(sent_at=F("sent_at") - timedelta(seconds=30))
    assert deliver(session_id=session.id) is None
    first, storm = fake_slack.replies(root.ts)
    assert "fired again" in blocks_text(first.blocks)
    assert "fired 100 more times" in blocks_text(storm.blocks) and "web-1 down #99" in blocks_text(storm.blocks)


def test_a_queued_session_with_a_thread_shows_how_it_ended(configure, fake_slack):
    from tarsy.intake.items import Resolved
    from tarsy.services.intake.deliveries import session_resolve_alert

    configure()
    queued = session_receive(data="pod web-1 CrashLoopBackOff", fingerprint="fp-web-1").session
    again = session_receive(data="pod web-1 CrashLoopBackOff", fingerprint="fp-web-1")
    assert again.deduplicated and again.session.id == queued.id
    deliver(session_id=queued.id)
    [root] = fake_slack.top_level()
    assert "Queued" in blocks_text(root.blocks)  # the repeat opened the thread before any worker took it
    assert session_resolve_alert(source="alertmanager", resolution=Resolved("fp-web-1"))["action"] == "cancelled"
    deliver(session_id=queued.id)
    assert "Cancelled" in blocks_text(root.blocks)
    texts = [blocks_text(m.blocks) for m in fake_slack.replies(root.ts)]
    assert "fired again" in texts[0]
    assert any("before the investigation began" in t for t in texts)  # the summary gives the reason
    assert any("Alert resolved in alertmanager" in t for t in texts)


@pytest.mark.django_db(transaction=True)
def test_repeats_arriving_while_a_reply_is_posted_go_out_once_after_the_interval_with_their_own_count(
        configure, fake_slack):
    """A storm of 9: 4 before the reply is posted, 5 while it is in flight. The thread says 4, then (one
    interval later) 5 — never a running total, never two replies within an interval."""
    from django.db import connection

    configure(update_interval="30s")
    session = _started()

    def fire(n: int, start: int = 0) -> None:
        for i in range(start, start + n):
            alert_attached.send(sender=AlertSession, session=session, kind="occurrence", data=f"web-1 down #{i}")

    def fire_from_slacks_thread() -> None:
        try:
            fire(5, start=4)
        finally:
            connection.close()

    fire(4)
    fake_slack.before_reply(fire_from_slacks_thread)
    assert deliver(session_id=session.id) == 0.0  # more arrived meanwhile: look again at once
    [root] = fake_slack.top_level()
    assert [m.text for m in fake_slack.replies(root.ts)] == ["The alert fired 4 more times (the latest:)"]
    wait = deliver(session_id=session.id)
    assert wait is not None and 0 < wait <= 30 and len(fake_slack.replies(root.ts)) == 1  # the 5 wait it out
    SlackPost.objects.filter(thread_id=session.id).update(sent_at=F("sent_at") - timedelta(seconds=30))
    assert deliver(session_id=session.id) is None
    first, second = fake_slack.replies(root.ts)
    assert "fired 5 more times" in blocks_text(second.blocks) and "web-1 down #8" in blocks_text(second.blocks)
