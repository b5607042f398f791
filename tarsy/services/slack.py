"""Slack bookkeeping: a session's thread, what it should show (a revision) and its outbox of replies.

Written inside the transaction of the change they record (through the lifecycle signals), so a reply is
never lost nor sent for a change that rolled back; delivered later by a task under a lease."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Exists, F, OuterRef, Q

from tarsy.models import SlackPost, SlackThread


def _thread_ensure(session_id: Any, channel: str) -> None:
    # INSERT … ON CONFLICT DO NOTHING: two concurrent first changes must not fail the transaction that sends them.
    SlackThread.objects.bulk_create([SlackThread(session_id=session_id, channel=channel)], ignore_conflicts=True)


def slack_thread_touch(*, session_id: Any, channel: str) -> None:
    """The session changed in a way its message shows: one more revision to deliver."""
    _thread_ensure(session_id, channel)
    SlackThread.objects.filter(session_id=session_id).update(revision=F("revision") + 1)


def slack_post_add(*, session_id: Any, channel: str, kind: str, text: str, blocks: list[dict[str, Any]],
                   ref: str = "") -> SlackPost:
    """Queue a reply for the session's thread (the thread's message is posted first if it is not yet); `ref`
    names what it shows, for `slack_post_edit`."""
    _thread_ensure(session_id, channel)
    return SlackPost.objects.create(thread_id=session_id, kind=kind, text=text, blocks=blocks, ref=ref)


def slack_post_edit(*, session_id: Any, ref: str, text: str, blocks: list[dict[str, Any]], now: datetime) -> bool:
    """Show the reply `ref` as `text`/`blocks` from now on: posted so if it waits, else updated in place. False
    when the thread has no such reply."""
    return bool(SlackPost.objects.filter(thread_id=session_id, ref=ref).update(text=text, blocks=blocks,
                                                                                 edited_at=now))


def slack_post_merge(*, session_id: Any, channel: str, kind: str,
                     render: Callable[[int], tuple[str, list[dict[str, Any]]]]) -> SlackPost:
    """Queue a reply of `kind`, or merge it into the one of that kind still waiting: a storm of repeats becomes
    one reply per delivery, `render(repeats)` giving its text and blocks."""
    _thread_ensure(session_id, channel)
    waiting = (SlackPost.objects.select_for_update().filter(thread_id=session_id, kind=kind, sent_at__isnull=True,
                                                            dropped_at__isnull=True).order_by("-id").first())
    repeats = waiting.repeats + 1 if waiting else 1
    text, blocks = render(repeats)
    if waiting is None:
        return SlackPost.objects.create(thread_id=session_id, kind=kind, text=text, blocks=blocks)
    SlackPost.objects.filter(id=waiting.id).update(text=text, blocks=blocks, repeats=repeats)
    return waiting


def slack_post_last_sent(*, session_id: Any, kind: str) -> datetime | None:
    return (SlackPost.objects.filter(thread_id=session_id, kind=kind, sent_at__isnull=False)
            .order_by("-sent_at").values_list("sent_at", flat=True).first())


def slack_thread_lease(*, session_id: Any, now: datetime, seconds: float) -> SlackThread | None:
    """Compare-and-set: the thread for this worker until `now + seconds`, unless another holds it or its
    backoff (`retry_at`) has not passed."""
    free = Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    due = Q(retry_at__isnull=True) | Q(retry_at__lte=now)
    taken = SlackThread.objects.filter(free & due, session_id=session_id).update(
        lease_until=now + timedelta(seconds=seconds))
    return SlackThread.objects.get(session_id=session_id) if taken else None


def slack_thread_release(*, session_id: Any) -> None:
    SlackThread.objects.filter(session_id=session_id).update(lease_until=None)


def slack_thread_posted(*, session_id: Any, channel: str, ts: str, revision: int, now: datetime) -> None:
    """The message exists in Slack (channel as its ID) and shows `revision`."""
    SlackThread.objects.filter(session_id=session_id).update(
        channel=channel, ts=ts, shown_revision=revision, shown_at=now, failures=0, last_error="", retry_at=None)


def slack_thread_shown(*, session_id: Any, revision: int, now: datetime) -> None:
    SlackThread.objects.filter(session_id=session_id).update(
        shown_revision=revision, shown_at=now, failures=0, last_error="", retry_at=None)


def slack_thread_failed(*, session_id: Any, error: str, retry_at: datetime) -> None:
    SlackThread.objects.filter(session_id=session_id).update(
        failures=F("failures") + 1, last_error=error[:2000], retry_at=retry_at)


def slack_thread_give_up(*, session_id: Any, error: str, revision: int, now: datetime) -> int:
    """After bounded retries: drop the pending replies and this revision; the next change tries afresh.
    Returns how many replies were dropped."""
    dropped = SlackPost.objects.filter(thread_id=session_id, sent_at__isnull=True, dropped_at__isnull=True).update(
        dropped_at=now)
    dropped += SlackPost.objects.filter(_edited(), thread_id=session_id).update(edited_at=None)
    SlackThread.objects.filter(session_id=session_id).update(
        failures=0, retry_at=None, last_error=error[:2000],
        shown_revision=revision)
    return dropped


def slack_post_claim(*, post_id: int, repeats: int, edited_at: datetime | None, now: datetime) -> bool:
    """Take the reply as read (`repeats`, `edited_at`) for posting: stamped sent before the call, so a repeat
    arriving while it is in flight starts a new reply (`slack_post_merge` merges into unsent ones only), counted
    from zero, which waits its interval, and an edit arriving meanwhile is shown by an update once it is posted.
    False when a repeat was merged into it or it was edited since it was read (read it again)."""
    return bool(SlackPost.objects.filter(id=post_id, repeats=repeats, edited_at=edited_at,
                                         sent_at__isnull=True).update(sent_at=now, edited_at=None))


def slack_post_unclaim(*, post_id: int) -> None:
    """The call failed: the reply is pending again (it is retried with the thread)."""
    SlackPost.objects.filter(id=post_id, ts="").update(sent_at=None)


def slack_post_sent(*, post_id: int, ts: str) -> None:
    """Slack has the claimed reply as `ts`."""
    SlackPost.objects.filter(id=post_id).update(ts=ts)


def slack_posts_pending(*, session_id: Any) -> list[SlackPost]:
    return list(SlackPost.objects.filter(thread_id=session_id, sent_at__isnull=True, dropped_at__isnull=True))


def _edited() -> Q:
    """Posted replies whose edit Slack does not show yet."""
    return Q(edited_at__isnull=False, dropped_at__isnull=True) & ~Q(ts="")


def slack_posts_edited(*, session_id: Any) -> list[SlackPost]:
    return list(SlackPost.objects.filter(_edited(), thread_id=session_id))


def slack_post_edit_shown(*, post_id: int, edited_at: datetime | None) -> None:
    """Slack shows the edit read at `edited_at`; a later edit stays to be shown."""
    SlackPost.objects.filter(id=post_id, edited_at=edited_at).update(edited_at=None)


def slack_thread_needs_delivery(*, session_id: Any) -> bool:
    """Something the thread should show is not shown yet: a newer revision, a pending reply or an edit."""
    return (SlackThread.objects.filter(session_id=session_id, revision__gt=F("shown_revision")).exists()
            or SlackPost.objects.filter(thread_id=session_id, sent_at__isnull=True, dropped_at__isnull=True).exists()
            or SlackPost.objects.filter(_edited(), thread_id=session_id).exists())


def slack_thread_for_message(*, channel: str, ts: str) -> SlackThread | None:
    """The thread whose message is `ts` in `channel` (a reply names its thread by the message's ts)."""
    if not channel or not ts:
        return None
    return SlackThread.objects.filter(channel=channel, ts=ts).first()


def slack_threads_stalled(*, now: datetime) -> list[Any]:
    """Sessions with undelivered Slack work that no worker holds and whose backoff has passed: their task was
    lost (a worker died mid-delivery, a queued retry vanished)."""
    idle = (Q(lease_until__isnull=True) | Q(lease_until__lt=now)) & (Q(retry_at__isnull=True) | Q(retry_at__lte=now))
    pending = SlackPost.objects.filter(thread_id=OuterRef("session_id"), sent_at__isnull=True, dropped_at__isnull=True)
    edited = SlackPost.objects.filter(_edited(), thread_id=OuterRef("session_id"))
    behind = Q(revision__gt=F("shown_revision")) | Exists(pending) | Exists(edited)
    return list(SlackThread.objects.filter(idle & behind).values_list("session_id", flat=True))
