"""Deliver a session's Slack work: post its message, update it in place (throttled), post queued replies and
show the edits of posted ones (an action proposal, once decided).

Runs in a Celery task (tarsy.tasks.slack_deliver), never in a request or a transaction. One worker at a time
per session holds the thread's lease, so replies keep their order and nothing is posted twice by two
workers. A failed call is retried with backoff (or after Slack's Retry-After) up to MAX_FAILURES times; then
the pending replies are dropped, logged and counted, and the next change of the session starts afresh.
The investigation never waits for any of it."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.utils import timezone

from tarsy.config import get_config
from tarsy.metrics import SLACK_DROPPED
from tarsy.models import AlertSession, SlackPost, SlackPostKind, SlackThread
from tarsy.services import sessions, stages
from tarsy.services import slack as slack_service

from . import messages
from .client import SlackGateway, SlackUnavailable
from .config import session_link, slack_config

log = logging.getLogger(__name__)

LEASE_S = 300.0  # longer than a delivery's calls can take (timeouts × retries, short Retry-After waits)
MAX_FAILURES = 5  # consecutive failed calls before the pending replies are given up
MAX_BACKOFF_S = 60.0
MERGED_KINDS = (SlackPostKind.OCCURRENCE, SlackPostKind.RELATED)


def deliver(*, session_id: Any) -> float | None:
    """Bring the thread up to date; returns in how many seconds to run again, or None when done."""
    config = slack_config()
    if config is None:
        return None
    thread = slack_service.slack_thread_lease(session_id=session_id, now=timezone.now(), seconds=LEASE_S)
    if thread is None:
        return None  # another worker delivers (and looks again after its release), or a retry is scheduled
    try:
        again_in = _deliver_leased(thread, SlackGateway(config), config.update_interval)
    finally:
        slack_service.slack_thread_release(session_id=session_id)
    if again_in is None and slack_service.slack_thread_needs_delivery(session_id=session_id):
        return 0.0  # a change arrived while this worker held the lease
    return again_in


def _deliver_leased(thread: SlackThread, gateway: SlackGateway, interval: float) -> float | None:
    session = sessions.session_find(session_id=thread.session_id)
    if session is None:
        return None
    posts = slack_service.slack_posts_pending(session_id=session.id)
    try:
        again_in = _show_session(thread, session, gateway, interval, replies_waiting=bool(posts))
        for post in posts:
            wait = _storm_wait(post, interval)
            if wait > 0:  # later replies wait too: the thread keeps its order
                return wait if again_in is None else min(wait, again_in)
            if not slack_service.slack_post_claim(post_id=post.id, repeats=post.repeats, edited_at=post.edited_at,
                                                  now=timezone.now()):
                return 0.0  # a repeat merged into it, or it was edited, since it was read: read it again
            try:
                _, ts = gateway.post(channel=thread.channel, text=post.text, blocks=post.blocks, thread_ts=thread.ts)
            except SlackUnavailable:
                slack_service.slack_post_unclaim(post_id=post.id)
                raise
            slack_service.slack_post_sent(post_id=post.id, ts=ts)
        for post in slack_service.slack_posts_edited(session_id=session.id):  # each has `edited_at`
            gateway.update(channel=thread.channel, ts=post.ts, text=post.text, blocks=post.blocks)
            slack_service.slack_post_edit_shown(post_id=post.id, edited_at=post.edited_at)
    except SlackUnavailable as exc:
        return _failed(thread, exc)
    return again_in


def _storm_wait(post: SlackPost, interval: float) -> float:
    """Seconds before a repeat/related reply may go: one per interval, so a storm merges into few replies."""
    if post.kind not in MERGED_KINDS:
        return 0.0
    last = slack_service.slack_post_last_sent(session_id=post.thread_id, kind=post.kind)
    return 0.0 if last is None else interval - (timezone.now() - last).total_seconds()


def _show_session(thread: SlackThread, session: AlertSession, gateway: SlackGateway, interval: float, *,
                  replies_waiting: bool) -> float | None:
    """Post the message (also when replies need a thread), or update it when it shows an older revision and
    the throttle allows."""
    if thread.revision <= thread.shown_revision and (thread.ts or not replies_waiting):
        return None
    now = timezone.now()
    if thread.ts and not session.is_terminal and thread.shown_at is not None:
        wait = interval - (now - thread.shown_at).total_seconds()
        if wait > 0:
            return wait
    text, blocks = _session_blocks(session)
    if thread.ts:
        gateway.update(channel=thread.channel, ts=thread.ts, text=text, blocks=blocks)
        slack_service.slack_thread_shown(session_id=session.id, revision=thread.revision, now=now)
    else:
        channel, ts = gateway.post(channel=thread.channel, text=text, blocks=blocks)
        slack_service.slack_thread_posted(session_id=session.id, channel=channel, ts=ts, revision=thread.revision,
                                          now=now)
        thread.channel, thread.ts = channel, ts
    return None


def _session_blocks(session: AlertSession) -> messages.Message:
    chain = get_config().chains.get(session.chain_id)
    ran = stages.stages_of_session(session_id=session.id)
    return messages.session_message(session, stage=ran[-1] if ran else None,
                                    chain_stages=len(chain.stages) if chain else 0, url=session_link(session.id))


def _failed(thread: SlackThread, exc: SlackUnavailable) -> float | None:
    now = timezone.now()
    failures = thread.failures + 1
    if exc.permanent or failures >= MAX_FAILURES:
        dropped = slack_service.slack_thread_give_up(session_id=thread.session_id, error=str(exc),
                                                     revision=thread.revision, now=now)
        SLACK_DROPPED.labels("permanent" if exc.permanent else "retries_exhausted").inc(dropped + 1)
        log.error("Slack: giving up on session %s after %s failure(s) (%s replies dropped): %s",
                  thread.session_id, failures, dropped, exc)
        return None
    delay = exc.retry_after if exc.retry_after is not None else min(2.0 ** failures, MAX_BACKOFF_S)
    slack_service.slack_thread_failed(session_id=thread.session_id, error=str(exc),
                                      retry_at=now + timedelta(seconds=delay))
    log.warning("Slack: delivery for session %s failed (%s/%s), retrying in %.1fs: %s", thread.session_id,
                failures, MAX_FAILURES, delay, exc)
    return delay
