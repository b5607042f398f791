"""`intake:` and `system.external_url` in tarsy.yaml: defaults, references checked at load, clear refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agents.config import ConfigError, load_config
from tarsy.intake.items import Firing
from tarsy.intake.mapping import map_alert


def _load(directory: Path, tarsy: dict, env: dict | None = None):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tarsy.yaml").write_text(yaml.safe_dump(tarsy))
    return load_config(directory, env=env or {})


def test_a_fresh_install_accepts_every_source_with_the_default_alert_type(tmp_path):
    config = _load(tmp_path, {})
    for source in ("alertmanager", "grafana", "pagerduty"):
        settings = getattr(config.intake, source)
        assert (settings.enabled, settings.secret_env, settings.rules) == (True, "", [])
    assert config.intake.alertmanager.session_per == "alert"
    assert config.intake.pagerduty.severity_label == "urgency"


def test_a_rule_naming_an_unknown_alert_type_stops_startup(tmp_path):
    with pytest.raises(ConfigError) as exc:
        _load(tmp_path, {"intake": {"grafana": {"rules": [{"match": {"team": "db"}, "alert_type": "database"}]}}})
    assert "intake.grafana.rules.0.alert_type: unknown alert type 'database'" in str(exc.value)


@pytest.mark.parametrize("intake, where", [
    ({"alertmanager": {"session_per": "cluster"}}, "session_per"),
    ({"pagerduty": {"rules": [{"match": {}}]}}, "match"),
    ({"grafana": {"severity_map": {"sev1": "urgent"}}}, "severity_map"),
    ({"pagerduty": {"session_per": "group"}}, "session_per"),  # PagerDuty sends one incident per delivery
    ({"splunk": {}}, "splunk"),
])
def test_bad_intake_settings_are_refused_naming_the_key(tmp_path, intake, where):
    with pytest.raises(ConfigError) as exc:
        _load(tmp_path, {"intake": intake})
    assert where in str(exc.value)


@pytest.mark.parametrize("url, stored", [
    ("https://tarsy.example.com/", "https://tarsy.example.com"),
    ("http://10.0.0.5:8000/tarsy", "http://10.0.0.5:8000/tarsy"),
    ("", ""),
])
def test_external_url_is_kept_without_a_trailing_slash(tmp_path, url, stored):
    assert _load(tmp_path, {"system": {"external_url": url}}).system.external_url == stored


@pytest.mark.parametrize("url", ["tarsy.example.com", "ftp://tarsy.example.com", "https://x.example.com/?a=1",
                                 "https:///path"])
def test_external_url_must_be_an_absolute_http_base(tmp_path, url):
    with pytest.raises(ConfigError) as exc:
        _load(tmp_path, {"system": {"external_url": url}})
    assert "external_url" in str(exc.value)


def test_a_secret_env_that_is_not_set_is_a_warning(tmp_path):
    config = _load(tmp_path, {"intake": {"pagerduty": {"secret_env": "PD_SECRET"}}})
    assert any("PD_SECRET" in w and "pagerduty" in w for w in config.warnings(env={}))
    assert not any("PD_SECRET" in w for w in config.warnings(env={"PD_SECRET": "s"}))


def test_mapping_falls_back_to_the_severity_label_and_ignores_a_foreign_runbook(tmp_path):
    config = _load(tmp_path, {"intake": {"alertmanager": {"severity_map": {"Sev2": "high"}}}})
    settings = config.intake.alertmanager
    alert = Firing(fingerprint="f", labels={"severity": "SEV2"}, data={},
                   runbook_url="https://wiki.internal.example/runbook")
    mapped = map_alert(alert, settings, allowed_runbook_domains=["github.com"])
    assert (mapped.alert_type, mapped.severity, mapped.runbook) == (None, "high", None)
    unknown = map_alert(Firing(fingerprint="f", labels={"severity": "sev-9"}, data={}), settings,
                        allowed_runbook_domains=[])
    assert unknown.severity is None  # the session's default (warning), never a refused webhook
