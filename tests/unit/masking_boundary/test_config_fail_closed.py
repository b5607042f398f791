"""Masking settings that cannot be honoured stop loading, check_config and startup; nothing runs unmasked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agents.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[3]
TRANSPORT = {"type": "stdio", "command": "true"}


def _config_dir(tmp_path: Path, tarsy: dict) -> Path:
    directory = tmp_path / "config"
    directory.mkdir()
    (directory / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    return directory


def _server(**data_masking) -> dict:
    return {"mcp_servers": {"k8s": {"transport": TRANSPORT, "data_masking": data_masking}}}


def _manage(*args: str, config_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "TARSY_CONFIG_DIR")}
    env["TARSY_CONFIG_DIR"] = str(config_dir)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)


def _problems(directory: Path) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load_config(directory, env={})
    return err.value.problems


@pytest.mark.parametrize("tarsy, expected", [
    (_server(pattern_groups=["kubernetes", "kubernets"]),
     "tarsy.yaml: mcp_servers.k8s.data_masking.pattern_groups: unknown masking group 'kubernets' (known: all, "),
    (_server(patterns=["pasword", "token"]),
     "tarsy.yaml: mcp_servers.k8s.data_masking.patterns: unknown masking pattern 'pasword' (known: "),
    ({"defaults": {"alert_masking": {"pattern_group": "securty"}}},
     "tarsy.yaml: defaults.alert_masking.pattern_group: unknown masking group 'securty' (known: "),
    (_server(custom_patterns=[{"name": "card", "pattern": "(\\d{4}"}]),
     "tarsy.yaml: mcp_servers.k8s.data_masking.custom_patterns.0.pattern: invalid regular expression: missing )"),
    (_server(custom_patterns=[{"name": "card", "pattern": "\\d{16}", "replacement": "\\1-XXXX"}]),
     "tarsy.yaml: mcp_servers.k8s.data_masking.custom_patterns.0: invalid replacement '\\\\1-XXXX': invalid group "
     "reference 1"),
])
def test_masking_that_cannot_be_honoured_is_a_load_error_naming_the_key(tmp_path, tarsy, expected):
    problems = _problems(_config_dir(tmp_path, tarsy))

    assert [p for p in problems if p.startswith(expected)], problems


def test_every_masking_problem_is_listed_at_once(tmp_path):
    tarsy = {"defaults": {"alert_masking": {"pattern_group": "nope"}},
             **_server(pattern_groups=["ghost"], patterns=["phantom"])}

    problems = _problems(_config_dir(tmp_path, tarsy))

    assert [p.split(": ")[1] for p in problems] == ["defaults.alert_masking.pattern_group",
                                                    "mcp_servers.k8s.data_masking.pattern_groups",
                                                    "mcp_servers.k8s.data_masking.patterns"]


def test_known_names_still_load(tmp_path):
    tarsy = {"defaults": {"alert_masking": {"pattern_group": "all"}},
             **_server(pattern_groups=["kubernetes", "cloud"], patterns=["email"],
                       custom_patterns=[{"name": "card", "pattern": r"\b(\d{4})\d{8}(\d{4})\b",
                                         "replacement": r"\1-XXXX-\2"}])}

    config = load_config(_config_dir(tmp_path, tarsy), env={})

    assert config.mcp_servers["k8s"].data_masking.pattern_groups == ["kubernetes", "cloud"]


def test_check_config_exits_1_and_names_the_key_of_an_unknown_group(tmp_path):
    directory = _config_dir(tmp_path, _server(pattern_groups=["secrets", "clowd"]))

    result = _manage("check_config", "--config-dir", str(directory), config_dir=directory)

    assert result.returncode == 1, result.stdout
    assert "tarsy.yaml: mcp_servers.k8s.data_masking.pattern_groups: unknown masking group 'clowd'" in result.stderr
    assert "Configuration OK" not in result.stdout


def test_check_config_exits_1_and_names_the_key_of_a_bad_custom_regex(tmp_path):
    directory = _config_dir(tmp_path, _server(custom_patterns=[{"name": "x", "pattern": "[unclosed"}]))

    result = _manage("check_config", "--config-dir", str(directory), config_dir=directory)

    assert result.returncode == 1, result.stdout
    assert ("tarsy.yaml: mcp_servers.k8s.data_masking.custom_patterns.0.pattern: invalid regular expression"
            in result.stderr), result.stderr


def test_startup_refuses_an_unknown_alert_masking_group(tmp_path):
    directory = _config_dir(tmp_path, {"defaults": {"alert_masking": {"pattern_group": "securty"}}})

    result = _manage("check", config_dir=directory)  # the system check web and worker processes run at start

    assert result.returncode != 0
    assert "tarsy.yaml: defaults.alert_masking.pattern_group: unknown masking group 'securty'" in result.stderr
