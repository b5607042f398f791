"""Per-source mapping from an alert's labels to alert type, severity and runbook (`intake.<source>` in tarsy.yaml).

The first rule whose `match` labels all equal the alert's wins; what it leaves unset falls back to: severity from
the `severity_label` label through the severity map, the runbook from the alert's `runbook_url` annotation, and
the default alert type. A severity word nobody mapped, or a runbook annotation on a host outside
`system.runbooks.allowed_domains`, falls back too instead of refusing the webhook: the alert is still worth
investigating, and the sender would not retry a refusal. A runbook set aside is named (`refused_runbook`), so
intake can say so in its reply and on the session's timeline.
"""

from __future__ import annotations

from urllib.parse import urlparse

from agents.config.schema import IntakeRule, IntakeSourceConfig

from .items import Firing, Mapped


def _rule_for(labels: dict[str, str], rules: list[IntakeRule]) -> IntakeRule | None:
    return next((r for r in rules if all(labels.get(k) == v for k, v in r.match.items())), None)


def runbook_host_allowed(url: str, allowed: list[str]) -> bool:
    parsed = urlparse(url)
    host = (parsed.hostname or "").lower()
    return parsed.scheme in ("http", "https") and bool(host) and any(
        host == d or host.endswith("." + d) for d in allowed)


def map_alert(alert: Firing, source: IntakeSourceConfig, *, allowed_runbook_domains: list[str]) -> Mapped:
    rule = _rule_for(alert.labels, source.rules)
    severity = rule.severity if rule and rule.severity else source.severity_for(
        alert.labels.get(source.severity_label, ""))
    runbook = rule.runbook if rule and rule.runbook else None
    refused = ""
    if runbook is None and alert.runbook_url:
        if runbook_host_allowed(alert.runbook_url, allowed_runbook_domains):
            runbook = alert.runbook_url
        else:
            refused = alert.runbook_url
    return Mapped(fingerprint=alert.fingerprint, data=alert.data, alert_type=rule.alert_type if rule else None,
                  severity=severity, runbook=runbook, refused_runbook=refused)
