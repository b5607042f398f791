"""Session titles from the alert shapes intake stores, and chains' title templates."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agents.config.schema import ChainConfig
from tarsy.intake.titles import TITLE_MAX, alert_title

STAGES = [{"name": "analysis", "agents": [{"name": "KubernetesAgent"}]}]


def alertmanager(labels, annotations=None):
    return {"source": "alertmanager", "receiver": "tarsy", "alert": {"status": "firing", "labels": labels,
                                                                     "annotations": annotations or {}}}


def test_alertmanager_alert_is_named_by_alertname_and_where_it_fires():
    data = alertmanager({"alertname": "KubePodCrashLooping", "namespace": "shop", "pod": "checkout-1",
                         "severity": "critical"})
    assert alert_title(data) == "KubePodCrashLooping (namespace=shop, pod=checkout-1)"


def test_alertmanager_alert_without_alertname_uses_its_summary():
    data = alertmanager({"team": "db"}, {"summary": "Replication lag above 30s"})
    assert alert_title(data) == "Replication lag above 30s"


def test_grouped_delivery_names_the_group_and_counts_its_alerts():
    data = {"source": "grafana", "commonLabels": {"alertname": "HighCPU", "service": "api"},
            "alerts": [{"labels": {}}, {"labels": {}}, {"labels": {}}]}
    assert alert_title(data) == "HighCPU (service=api) — 3 alerts"


def test_pagerduty_incident_is_named_by_its_title():
    data = {"source": "pagerduty", "incident": {"title": "Checkout error rate above 5%", "summary": "x"}}
    assert alert_title(data) == "Checkout error rate above 5%"


def test_json_alert_fields_and_stored_text_alike():
    data = {"alertname": "DiskFull", "instance": "db-1:9100", "value": 97}
    assert alert_title(data) == "DiskFull (instance=db-1:9100)"
    assert alert_title(json.dumps(data, indent=2)) == "DiskFull (instance=db-1:9100)"
    assert alert_title({"title": "Queue backlog"}) == "Queue backlog"
    assert alert_title({"labels": {"alertname": "NodeDown", "instance": "n3"}}) == "NodeDown (instance=n3)"


def test_text_alert_is_named_by_its_first_line_bounded():
    assert alert_title("\n  pod web-1 CrashLoopBackOff\nmore detail") == "pod web-1 CrashLoopBackOff"
    long = alert_title("x" * 1000)
    assert len(long) == TITLE_MAX and long.endswith("…")


def test_template_names_fields_and_falls_back_when_one_is_missing():
    template = "{labels.alertname} on {labels.instance}"
    data = alertmanager({"alertname": "NodeDown", "instance": "n3"})
    assert alert_title(data, template=template) == "NodeDown on n3"
    assert alert_title(alertmanager({"alertname": "NodeDown"}), template=template) == "NodeDown"


@pytest.mark.parametrize("template,reason", [
    ("{labels.alertname", "unbalanced braces"),
    ("{labels..x} down", "invalid title_template field"),
    ("static text", "names no alert field"),
])
def test_bad_template_is_a_config_error_saying_what_is_wrong(template, reason):
    with pytest.raises(ValidationError, match=reason):
        ChainConfig.model_validate({"alert_types": ["k"], "title_template": template, "stages": STAGES})
