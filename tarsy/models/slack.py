"""Slack: the message that mirrors a session, and the thread replies waiting to reach Slack (an outbox)."""

from __future__ import annotations

from django.db import models

from .sessions import AlertSession


class SlackThread(models.Model):
    """A session's Slack message (its `ts` is the thread) and the state of delivering it.

    `revision` counts the changes the message should show; `shown_revision` is what Slack shows. A worker
    delivers under a lease (`lease_until`), so two workers never post the same session at once."""

    session = models.OneToOneField(AlertSession, primary_key=True, on_delete=models.CASCADE,
                                   related_name="slack_thread")
    channel = models.CharField(max_length=100, help_text="As configured until posted, then the channel ID")
    ts = models.CharField(max_length=32, blank=True, default="", help_text="The message's ts; '' until posted")
    revision = models.IntegerField(default=1)
    shown_revision = models.IntegerField(default=0)
    shown_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    retry_at = models.DateTimeField(null=True, blank=True, help_text="No call before this (backoff, Retry-After)")
    failures = models.IntegerField(default=0, help_text="Consecutive failed calls")
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["channel", "ts"], name="slack_thread_channel_ts")]

    def __str__(self) -> str:
        return f"slack {self.channel}/{self.ts or '-'} for {self.session_id}"


class SlackPostKind(models.TextChoices):
    SUMMARY = "summary"  # the session ended: executive summary or failure reason, with the link
    OCCURRENCE = "occurrence"  # the same alert fired again
    RELATED = "related"  # another alert of the same group joined the session
    RESOLVED = "resolved"  # the monitoring source says the alert is over
    ANSWER = "answer"  # a follow-up question and the chat agent's answer
    NOTICE = "notice"  # why a question from the thread was not taken
    TRIAGE = "triage"  # someone claimed, resolved, … the session (from Slack or the dashboard)
    ACTION = "action"  # an action proposal (edited in place once decided) or how the approved action went


class SlackPost(models.Model):
    """A reply for a session's thread, kept (masked) until Slack has it or delivery gives up on it.

    A reply shown in place as its subject changes (an action proposal, once decided) has a `ref` naming that
    subject; an edit replaces its text and blocks and stamps `edited_at`, which delivery clears once Slack shows
    the edit (chat.update of `ts`), or, for a reply not yet posted, once it posts it."""

    thread = models.ForeignKey(SlackThread, on_delete=models.CASCADE, related_name="posts")
    kind = models.CharField(max_length=16, choices=SlackPostKind.choices)
    text = models.TextField(help_text="The notification text; the blocks carry the message")
    blocks = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    dropped_at = models.DateTimeField(null=True, blank=True, help_text="Given up after bounded retries")
    ts = models.CharField(max_length=32, blank=True, default="")
    repeats = models.IntegerField(default=1, help_text="Alerts of a storm merged into this reply while it waited")
    ref = models.CharField(max_length=64, blank=True, default="",
                           help_text="What the reply shows, when it is edited in place later (`action:<id>`)")
    edited_at = models.DateTimeField(null=True, blank=True, help_text="Edited since Slack last showed it")

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["thread", "sent_at", "dropped_at"], name="slack_post_pending")]
        constraints = [models.UniqueConstraint(fields=["thread", "ref"], condition=~models.Q(ref=""),
                                               name="slack_post_unique_ref")]

    def __str__(self) -> str:
        return f"{self.kind} for {self.thread_id}"
