"""Slack's side of a test: signed requests as Slack sends them, and the `slack:` config section."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
_ids = itertools.count(1)  # Slack gives every event, command and interaction its own id (event_id, trigger_id)


def signed_headers(body: str, *, secret: str = SIGNING_SECRET, timestamp: int | str | None = None) -> dict[str, str]:
    """Django test-client headers for a request signed as Slack signs it (v0 HMAC-SHA256 of the raw body)."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {"HTTP_X_SLACK_REQUEST_TIMESTAMP": ts, "HTTP_X_SLACK_SIGNATURE": signature}


def mention_event(*, channel: str, thread_ts: str, text: str, user: str = "U0ALICE") -> str:
    """An Events API `app_mention` callback for a reply in a thread, as JSON text."""
    return json.dumps({
        "token": "unused", "team_id": "T0TEAM", "api_app_id": "A0TARSY", "type": "event_callback",
        "event_id": f"Ev{next(_ids):06d}", "event_time": int(time.time()),
        "event": {"type": "app_mention", "user": user, "text": text, "ts": f"{time.time():.6f}",
                  "channel": channel, "thread_ts": thread_ts, "event_ts": f"{time.time():.6f}"},
    })


def slash_command(text: str, *, user: str = "U0ALICE", user_name: str = "alice") -> str:
    """A `/tarsy` slash command as Slack posts it (form-encoded)."""
    return urlencode({"token": "unused", "team_id": "T0TEAM", "channel_id": "CALERTS", "user_id": user,
                      "user_name": user_name, "command": "/tarsy", "text": text,
                      "response_url": "https://hooks.slack.com/commands/T0TEAM/1/x",
                      "trigger_id": f"{next(_ids)}.2.3"})


def slack_section(base_url: str, **overrides: Any) -> dict[str, Any]:
    return {"channel": "#alerts", "base_url": base_url, "update_interval": "0.2s", **overrides}


def block_action(*, action_id: str, block_id: str, message_ts: str, user: str = "U0ALICE", user_name: str = "alice",
                 channel: str = "CALERTS", selected: str = "") -> str:
    """A `block_actions` interaction (a click on a button of a message, or an option picked) as Slack posts it:
    form-encoded, the JSON in `payload`."""
    action: dict[str, Any] = {"action_id": action_id, "block_id": block_id, "action_ts": f"{time.time():.6f}"}
    if selected:
        action.update(type="static_select", selected_option={"text": {"type": "plain_text", "text": selected},
                                                             "value": selected})
    else:
        action.update(type="button", value=action_id.removeprefix("triage_"),
                      text={"type": "plain_text", "text": action_id})
    payload = {
        "type": "block_actions", "api_app_id": "A0TARSY", "token": "unused", "trigger_id": f"{next(_ids)}.2.3",
        "user": {"id": user, "username": user_name, "name": user_name, "team_id": "T0TEAM"},
        "team": {"id": "T0TEAM", "domain": "example"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel, "is_ephemeral": False},
        "channel": {"id": channel, "name": "alerts"},
        "message": {"type": "message", "ts": message_ts, "text": "…"},
        "response_url": "https://hooks.slack.com/actions/T0TEAM/1/x",
        "actions": [action],
    }
    return urlencode({"payload": json.dumps(payload)})


def blocks_text(blocks: Any) -> str:
    """Every `text` string in a Block Kit structure, one per line: what a reader of the message sees."""
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                out.append(item) if key == "text" and isinstance(item, str) else walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
    walk(blocks)
    return "\n".join(out)


def view_submission(*, view: dict[str, Any], comment: str, user: str = "U0ALICE", user_name: str = "alice") -> str:
    """A `view_submission` interaction as Slack posts it when a member submits a modal TARSy opened (`view`, as
    sent to views.open) with `comment` typed into its `comment` input."""
    opened = {k: v for k, v in view.items() if k != "trigger_id"}
    payload = {
        "type": "view_submission", "api_app_id": "A0TARSY", "token": "unused", "trigger_id": f"{next(_ids)}.5.6",
        "user": {"id": user, "username": user_name, "name": user_name, "team_id": "T0TEAM"},
        "team": {"id": "T0TEAM", "domain": "example"},
        "view": {**opened, "id": "V000001", "team_id": "T0TEAM", "hash": "1700000000.abc",
                 "state": {"values": {"comment": {"comment": {"type": "plain_text_input", "value": comment}}}}},
    }
    return urlencode({"payload": json.dumps(payload)})
