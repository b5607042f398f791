from __future__ import annotations

import pytest

from tests.fakes.fake_slack import TOKEN, FakeSlack
from tests.support.slack import SIGNING_SECRET


@pytest.fixture
def fake_slack():
    with FakeSlack() as fake:
        yield fake


@pytest.fixture
def slack_env(monkeypatch):
    """The bot token and signing secret, where the config names them (and where child processes copy them)."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
