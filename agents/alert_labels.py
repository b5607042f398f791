"""An alert's labels, read the same way whatever sent it, so a silence's `labels.<name>` matcher and a memory's
scope mean one thing.

Each source keeps its labels in its own place in the stored data: an Alertmanager or Grafana alert under
`alert.labels`, a whole group's under `commonLabels` (else `groupLabels`), a PagerDuty incident as its service,
urgency, priority and first team (what its mapping rules match), a JSON alert under `labels` or as its own
top-level fields (`{"namespace": "shop", "pod": …}`, with `labels` winning where both name one).
"""

from __future__ import annotations

import json
from typing import Any

WEBHOOK_SOURCES = ("alertmanager", "grafana")


def _scalars(value: Any) -> dict[str, str]:
    """The text, number and boolean fields of an object as text (a boolean as JSON: `true`)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()
            if isinstance(v, (str, int, float, bool))}


def _summary(value: Any) -> str:
    return value.get("summary", "") if isinstance(value, dict) and isinstance(value.get("summary"), str) else ""


def pagerduty_labels(incident: dict[str, Any]) -> dict[str, str]:
    """What a PagerDuty rule can match: the incident's service, urgency, priority and first team."""
    teams = incident.get("teams") if isinstance(incident.get("teams"), list) else []
    labels = {"service": _summary(incident.get("service")), "priority": _summary(incident.get("priority")),
              "team": _summary(teams[0]) if teams else "",
              "urgency": incident.get("urgency") if isinstance(incident.get("urgency"), str) else ""}
    return {key: value for key, value in labels.items() if value}


def alert_labels(data: Any) -> dict[str, str]:
    """The labels of alert `data` as intake stores it (an object, or text that may hold one)."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return {}
    if not isinstance(data, dict):
        return {}
    source = data.get("source")
    if source in WEBHOOK_SOURCES and isinstance(data.get("alert"), dict):
        return _scalars(data["alert"].get("labels"))
    if source in WEBHOOK_SOURCES and isinstance(data.get("alerts"), list):
        return _scalars(data.get("commonLabels")) or _scalars(data.get("groupLabels"))
    if source == "pagerduty" and isinstance(data.get("incident"), dict):
        return pagerduty_labels(data["incident"])
    return {**_scalars(data), **_scalars(data.get("labels"))}
