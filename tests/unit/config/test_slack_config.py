"""The `slack:` section: channels per chain, secrets named by environment variable, refused mistakes."""

from __future__ import annotations

import pytest
import yaml

from agents.config import ConfigError, load_config


def _load(tmp_path, slack, system=None, env=None):
    tarsy = {"slack": slack, **({"system": system} if system else {})}
    (tmp_path / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    return load_config(tmp_path, env=env or {})


def test_a_chain_may_post_to_its_own_channel(tmp_path):
    config = _load(tmp_path, {"channel": "#alerts", "chain_channels": {"kubernetes": "C0K8S"},
                              "update_interval": "30s"}, system={"external_url": "https://tarsy.example.com/"})
    assert config.slack.channel_for("kubernetes") == "C0K8S"
    assert config.slack.channel_for("other") == "#alerts"
    assert config.slack.update_interval == 30.0
    assert config.system.external_url == "https://tarsy.example.com"  # one form: no trailing slash


def test_without_the_section_there_is_no_slack(tmp_path):
    assert _load(tmp_path, None).slack is None


@pytest.mark.parametrize(("slack", "system", "problem"), [
    ({}, None, "slack.channel: Field required"),
    ({"channel": "alerts and more"}, None, "slack.channel: invalid Slack channel"),
    ({"channel": "#a", "bot_token": "xoxb-1"}, None, "slack.bot_token: Extra inputs are not permitted"),
    ({"channel": "#a", "base_url": "slack.internal"}, None, "slack.base_url: base_url must be"),
    ({"channel": "#a", "chain_channels": {"ghost": "#b"}}, None, "slack.chain_channels: unknown chain 'ghost'"),
    ({"channel": "#a"}, {"external_url": "tarsy.example.com"}, "system.external_url: must be an absolute http(s) URL"),
])
def test_mistakes_are_refused_with_their_key(tmp_path, slack, system, problem):
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, slack, system)
    assert any(problem in p for p in err.value.problems), err.value.problems


def test_missing_secrets_are_warned_about(tmp_path):
    config = _load(tmp_path, {"channel": "#alerts"})
    warnings = config.warnings(env={"SLACK_SIGNING_SECRET": "s"})
    assert "Slack: environment variable SLACK_BOT_TOKEN (bot_token_env) is not set" in warnings
    assert not any("SLACK_SIGNING_SECRET" in w for w in warnings)
