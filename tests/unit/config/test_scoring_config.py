"""The `scoring:` section: off by default, a named provider must exist, and its key is checked like the others."""

from __future__ import annotations

import pytest
import yaml

from agents.config import ConfigError, load_config


def _write(directory, tarsy, providers=None):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    (directory / "llm-providers.yaml").write_text(yaml.safe_dump({"llm_providers": providers or {}}))
    return directory


def test_scoring_is_off_unless_a_provider_is_named(tmp_path):
    assert not load_config(_write(tmp_path, {}), env={}).scoring.enabled
    config = load_config(_write(tmp_path, {"scoring": {"llm_provider": "judge", "timeout": "90s"}},
                                {"judge": {"type": "openai", "model": "gpt-4o", "api_key_env": "JUDGE_KEY"}}), env={})
    assert config.scoring.enabled and config.scoring.timeout == 90.0
    assert "LLM provider 'judge': environment variable JUDGE_KEY is not set" in config.warnings(env={})


@pytest.mark.parametrize("scoring, message", [
    ({"llm_provider": "ghost"}, "tarsy.yaml: scoring.llm_provider: unknown llm provider 'ghost'"),
    ({"llm_provider": "demo", "timeout": "soon"}, "scoring.timeout"),
    ({"provider": "demo"}, "scoring.provider"),
])
def test_a_bad_scoring_section_stops_startup_with_its_key_path(tmp_path, scoring, message):
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, {"scoring": scoring}), env={})
    assert any(message in problem for problem in err.value.problems), err.value.problems
