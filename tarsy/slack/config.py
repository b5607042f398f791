"""The active Slack configuration, or None when Slack is not configured (or disabled)."""

from __future__ import annotations

from typing import Any

from agents.config.schema import SlackConfig
from tarsy.config import get_config
from tarsy.links import session_url


def slack_config() -> SlackConfig | None:
    slack = get_config().slack
    return slack if slack is not None and slack.enabled else None


def session_link(session_id: Any) -> str:
    """The session's absolute dashboard URL, or '' without `system.external_url`: Slack cannot follow a
    relative link (and refuses a button with one)."""
    url = session_url(session_id)
    return url if url.startswith(("http://", "https://")) else ""
