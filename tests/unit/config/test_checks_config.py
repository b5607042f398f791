"""The `checks:` section and the verdict contract: cron schedules checked field by field, names usable in URLs,
chains that exist, the reserved alert type; a run is healthy only when every verdict line says so."""

from __future__ import annotations

import pytest
import yaml

from agents.config import ConfigError, load_config
from agents.prompts.checks import check_verdict

CHECK = {"name": "payments-pods", "schedule": "*/5 8-18 * * 1-5", "chain": "kubernetes",
         "instruction": "Verify every Deployment in payments has all replicas ready."}


def _load(tmp_path, checks, chains=None):
    tarsy = {"checks": checks, **({"agent_chains": chains} if chains else {})}
    (tmp_path / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    return load_config(tmp_path, env={})


def test_checks_load_with_their_schedule(tmp_path):
    config = _load(tmp_path, [CHECK, {**CHECK, "name": "nightly", "schedule": "0 3 * * *", "enabled": False}])
    assert [(c.name, c.schedule, c.enabled) for c in config.checks] == [
        ("payments-pods", "*/5 8-18 * * 1-5", True), ("nightly", "0 3 * * *", False)]
    assert config.check("nightly").chain == "kubernetes" and config.check("ghost") is None


@pytest.mark.parametrize(("checks", "chains", "problem"), [
    ([{**CHECK, "schedule": "every minute"}], None, "checks.0.schedule: invalid cron"),
    ([{**CHECK, "schedule": "60 * * * *"}], None, "minute: 60 is outside 0-59"),
    ([{**CHECK, "schedule": "* * * * 7"}], None, "day of week: 7 is outside 0-6"),
    ([{**CHECK, "schedule": "*/0 * * * *"}], None, "minute: step must be positive"),
    ([{**CHECK, "schedule": "5-1 * * * *"}], None, "range 5-1 runs backwards"),
    ([{**CHECK, "name": "has space"}], None, "checks.0.name"),
    ([{**CHECK, "instruction": ""}], None, "checks.0.instruction"),
    ([{**CHECK, "chain": "ghost"}], None, "checks.0.chain: unknown chain 'ghost'"),
    ([CHECK, CHECK], None, "check names must be unique: payments-pods repeated"),
    ([{**CHECK, "cron": "* * * * *"}], None, "checks.0.cron: Extra inputs are not permitted"),
    ([], {"mine": {"alert_types": ["scheduled_check"],
                   "stages": [{"name": "a", "agents": [{"name": "KubernetesAgent"}]}]}},
     "'scheduled_check' is reserved"),
])
def test_mistakes_are_refused_with_their_key(tmp_path, checks, chains, problem):
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, checks, chains)
    assert any(problem in p for p in err.value.problems), err.value.problems


@pytest.mark.parametrize(("analysis", "verdict"), [
    ("All replicas ready.\n\nVERDICT: HEALTHY", "healthy"),
    ("All good.\n**VERDICT: HEALTHY**", "healthy"),
    ("verdict: healthy.", "healthy"),
    ("Two pods crash.\nVERDICT: PROBLEM", "problem"),
    ("Looks fine to me.", "problem"),  # no verdict: never hide a problem
    ("VERDICT: HEALTHY\n...on second thought\nVERDICT: PROBLEM", "problem"),
    ("End with VERDICT: HEALTHY or VERDICT: PROBLEM.", "problem"),  # an echo of the prompt is not a verdict
    ("VERDICT: MOSTLY HEALTHY", "problem"),
    ("", "problem"),
])
def test_a_run_is_healthy_only_when_every_verdict_line_says_so(analysis, verdict):
    assert check_verdict(analysis) == verdict
