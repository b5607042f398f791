"""The Slack Web API through slack-sdk: the one place SDK types live. Every text is masked on its way out.

429s are retried in-process (slack-sdk's RateLimitErrorRetryHandler sleeps for Retry-After) only when Slack
asks for a short pause; a longer one comes back as `SlackUnavailable.retry_after`, and the caller schedules
the retry instead of holding a worker."""

from __future__ import annotations

import logging
import os
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from agents.config.schema import SlackConfig
from agents.mcp.masking.boundary import mask_text
from tarsy.metrics import SLACK_CALLS

log = logging.getLogger(__name__)

MAX_INLINE_WAIT_S = 5  # a longer Retry-After is waited out by a scheduled task, not a sleeping worker
INTERACTIVE_TIMEOUT_S = 1  # a call answering a click: Slack waits three seconds for the whole request
# Errors no retry can fix: the configuration or the app's installation must change first.
PERMANENT_ERRORS = frozenset({
    "channel_not_found", "not_in_channel", "is_archived", "invalid_auth", "not_authed", "account_inactive",
    "token_revoked", "token_expired", "missing_scope", "no_permission", "msg_too_long", "invalid_blocks",
    "message_not_found", "cant_update_message", "edit_window_closed",  # a reply to edit was deleted, or is too old
})


class SlackUnavailable(Exception):
    """A Web API call failed; `retry_after` when Slack said how long to wait, `permanent` when retrying is
    pointless."""

    def __init__(self, message: str, *, retry_after: float | None = None, permanent: bool = False):
        super().__init__(message)
        self.retry_after = retry_after
        self.permanent = permanent


def _retry_after(headers: dict[str, Any] | None) -> float | None:
    for key, value in (headers or {}).items():
        if key.lower() == "retry-after":
            value = value[0] if isinstance(value, list) else value
            try:
                return float(value)
            except (TypeError, ValueError):
                return None
    return None


class ShortRateLimitRetry(RateLimitErrorRetryHandler):
    """Retry a 429 in-process only when its Retry-After is at most MAX_INLINE_WAIT_S."""

    def _can_retry(self, *, state, request, response=None, error=None) -> bool:
        if not super()._can_retry(state=state, request=request, response=response, error=error):
            return False
        wait = _retry_after(response.headers)
        return wait is None or wait <= MAX_INLINE_WAIT_S


def _masked_blocks(value: Any) -> Any:
    """Every `text` string in a Block Kit structure, masked (urls, ids and types are ours)."""
    if isinstance(value, list):
        return [_masked_blocks(v) for v in value]
    if isinstance(value, dict):
        return {k: mask_text(v) if k == "text" and isinstance(v, str) else _masked_blocks(v) for k, v in value.items()}
    return value


class SlackGateway:
    """chat.postMessage, chat.update, chat.postEphemeral, views.open and users.info for one configured workspace.

    `interactive`: for the calls made while Slack waits for TARSy's answer to a click or command — one short
    try, no retries (its caller carries on without the result)."""

    def __init__(self, config: SlackConfig, *, interactive: bool = False):
        retries = [] if interactive else [
            ConnectionErrorRetryHandler(max_retry_count=1), ShortRateLimitRetry(max_retry_count=2),
            ServerErrorRetryHandler(max_retry_count=1)]
        timeout = INTERACTIVE_TIMEOUT_S if interactive else int(config.timeout)
        self._client = WebClient(token=os.environ.get(config.bot_token_env, ""),
                                 base_url=config.base_url or WebClient.BASE_URL, timeout=timeout,
                                 retry_handlers=retries)

    def post(self, *, channel: str, text: str, blocks: list[dict[str, Any]],
             thread_ts: str = "") -> tuple[str, str]:
        """Post a message (a reply when `thread_ts`); returns (channel ID, ts)."""
        extra = {"thread_ts": thread_ts} if thread_ts else {}
        data = self._call("chat.postMessage", {"channel": channel, "text": mask_text(text),
                                               "blocks": _masked_blocks(blocks), "unfurl_links": False,
                                               "unfurl_media": False, **extra})
        return str(data.get("channel") or channel), str(data["ts"])

    def update(self, *, channel: str, ts: str, text: str, blocks: list[dict[str, Any]]) -> None:
        self._call("chat.update", {"channel": channel, "ts": ts, "text": mask_text(text),
                                   "blocks": _masked_blocks(blocks)})

    def post_ephemeral(self, *, channel: str, user: str, text: str) -> None:
        """A message only `user` sees (the answer to their click)."""
        self._call("chat.postEphemeral", {"channel": channel, "user": user, "text": mask_text(text)})

    def open_view(self, *, trigger_id: str, view: dict[str, Any]) -> None:
        """Open a modal for the member whose click carried `trigger_id` (valid for three seconds)."""
        self._call("views.open", {"trigger_id": trigger_id, "view": _masked_blocks(view)})

    def user_email(self, user: str) -> str:
        """The member's profile email ('' when hidden: the app lacks `users:read.email`)."""
        data = self._call("users.info", {"user": user}, read=True)
        profile = (data.get("user") or {}).get("profile") or {}
        return str(profile.get("email") or "")

    def _call(self, method: str, body: dict[str, Any], *, read: bool = False) -> dict[str, Any]:
        try:
            # Slack's read methods take query parameters, its writes a JSON body.
            response = (self._client.api_call(method, http_verb="GET", params=body) if read
                        else self._client.api_call(method, json=body))
        except SlackApiError as exc:
            error = str(exc.response.get("error", "")) if exc.response is not None else ""
            status = exc.response.status_code if exc.response is not None else 0
            retry_after = _retry_after(exc.response.headers) if exc.response is not None else None
            outcome = "rate_limited" if status == 429 else "error"
            SLACK_CALLS.labels(method, outcome).inc()
            raise SlackUnavailable(f"{method}: {error or f'HTTP {status}'}", retry_after=retry_after,
                                   permanent=error in PERMANENT_ERRORS) from exc
        except (SlackClientError, OSError) as exc:  # connection refused, timeout, malformed answer
            SLACK_CALLS.labels(method, "unreachable").inc()
            raise SlackUnavailable(f"{method}: {type(exc).__name__}: {exc}") from exc
        SLACK_CALLS.labels(method, "ok").inc()
        return dict(response.data) if isinstance(response.data, dict) else {}
