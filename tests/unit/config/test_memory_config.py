"""The `memory:` section: off by default, providers must exist and embed, and a chain can switch it off."""

from __future__ import annotations

import pytest
import yaml

from agents.config import ConfigError, load_config

EMBEDDER = {"type": "openai", "model": "text-embedding-3-small", "api_key_env": "OPENAI_API_KEY"}
STAGES = [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}]


def _write(directory, tarsy, providers=None):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    (directory / "llm-providers.yaml").write_text(yaml.safe_dump({"llm_providers": providers or {}}))
    return directory


def test_memory_is_off_by_default_and_chains_recall_and_reflect_once_on(tmp_path):
    config = load_config(_write(tmp_path, {}), env={})
    assert not config.memory.enabled and config.memory.max_injected == 5
    config = load_config(_write(tmp_path, {
        "memory": {"enabled": True, "embedding_provider": "embedder", "half_life_days": 30, "timeout": "1m"},
        "agent_chains": {"quiet": {"alert_types": ["quiet"], "memory": "off", "stages": STAGES},
                         "learner": {"alert_types": ["learner"], "memory": {"recall": False}, "stages": STAGES}},
    }, {"embedder": EMBEDDER}), env={})
    assert config.memory.enabled and config.memory.half_life_days == 30 and config.memory.timeout == 60
    assert config.chains["quiet"].memory is None
    assert (config.chains["learner"].memory.recall, config.chains["learner"].memory.reflect) == (False, True)
    assert config.chains["kubernetes"].memory.recall
    assert ("Memory embedding provider 'embedder': environment variable OPENAI_API_KEY is not set (memories are "
            "recalled by keyword only)") in config.warnings(env={})
    assert not [w for w in config.warnings(env={"OPENAI_API_KEY": "k"}) if "embedding" in w]


@pytest.mark.parametrize("memory, message", [
    ({"llm_provider": "ghost"}, "tarsy.yaml: memory.llm_provider: unknown llm provider 'ghost'"),
    ({"embedding_provider": "ghost"}, "tarsy.yaml: memory.embedding_provider: unknown llm provider 'ghost'"),
    ({"embedding_provider": "claude"}, "embeddings need one of google, openai"),
    ({"max_injected": 0}, "memory.max_injected"),
    ({"similarity_floor": 1.5}, "memory.similarity_floor"),
    ({"embedder": "x"}, "memory.embedder"),
])
def test_a_bad_memory_section_stops_startup_with_its_key_path(tmp_path, memory, message):
    providers = {"claude": {"type": "anthropic", "model": "claude-x", "api_key_env": "K"}}
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, {"memory": memory}, providers), env={})
    assert any(message in problem for problem in err.value.problems), err.value.problems
