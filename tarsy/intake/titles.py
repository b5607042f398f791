"""A session's title: which alert this is, in one line, from the alert's (masked) data.

Forty sessions of alert type `kubernetes` look alike; their alerts do not. The title is read from the shapes
intake stores: an Alertmanager or Grafana alert (`alertname` and the labels that say where: namespace, pod,
service, instance; else its `summary`), a whole group of them, a PagerDuty incident (its title), a JSON alert
(`alertname`, `title`, `summary`, `name`, `message`…), a text alert (its first line). A chain's
`title_template` (`{labels.alertname} on {labels.instance}`) takes precedence while every field it names is in
the data. Plain functions of the data: intake and the migration that titled existing sessions use them alike.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agents.config.schema import title_template_fields

TITLE_MAX = 160  # one line in the session list; the column holds 255
KEY_LABELS = ("namespace", "pod", "service", "instance")  # where the alert fires, in the order people read it
NAME_KEYS = ("alertname", "title", "name", "summary", "message", "description", "text")
_SPACE = re.compile(r"\s+")


def clean(text: str) -> str:
    """One line, bounded: whitespace (newlines, tabs) collapsed, cut with an ellipsis."""
    line = _SPACE.sub(" ", text).strip()
    return line if len(line) <= TITLE_MAX else line[: TITLE_MAX - 1].rstrip() + "…"


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _strings(value: Any) -> dict[str, str]:
    return {k: v for k, v in value.items() if isinstance(v, str) and v.strip()} if isinstance(value, dict) else {}


def _named(name: str, labels: dict[str, str]) -> str:
    where = ", ".join(f"{key}={labels[key]}" for key in KEY_LABELS if labels.get(key))
    return f"{name} ({where})" if where else name


def _from_labels(labels: dict[str, str], annotations: dict[str, str]) -> str:
    if labels.get("alertname"):
        return _named(labels["alertname"], labels)
    return annotations.get("summary") or _named("", labels).strip("() ")


def _from_group(data: dict[str, Any]) -> str:
    alerts = [a for a in data.get("alerts") or [] if isinstance(a, dict)]
    common = _strings(data.get("commonLabels")) or _strings(data.get("groupLabels"))
    title = _from_labels(common, _strings(data.get("commonAnnotations")))
    if not title and alerts:
        title = _from_labels(_strings(alerts[0].get("labels")), _strings(alerts[0].get("annotations")))
    return f"{title} — {len(alerts)} alerts" if title and len(alerts) > 1 else title


def _from_json(data: dict[str, Any]) -> str:
    if data.get("source") in ("alertmanager", "grafana"):
        if isinstance(data.get("alert"), dict):
            alert = data["alert"]
            return _from_labels(_strings(alert.get("labels")), _strings(alert.get("annotations")))
        if isinstance(data.get("alerts"), list):
            return _from_group(data)
    if data.get("source") == "pagerduty" and isinstance(data.get("incident"), dict):
        incident = data["incident"]
        return _text(incident.get("title")) or _text(incident.get("summary"))
    labels = {**_strings(data.get("labels")), **_strings(data)}
    name = next((labels[key] for key in NAME_KEYS if labels.get(key)), "")
    if name:
        return _named(name, labels)
    return ", ".join(f"{key}={value}" for key, value in list(_strings(data).items())[:3])


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")


def _lookup(data: Any, path: str) -> str:
    """A dotted path into the data; a webhook alert's own fields (`labels.x`) also from under its `alert`."""
    for root in (data, data.get("alert") if isinstance(data, dict) else None):
        value = root
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
            return str(value)
    return ""


def render_template(template: str, data: Any) -> str:
    """The template with every field filled in, or "" when a field is missing (the derived title is used)."""
    values = {path: _lookup(data, path) for path in title_template_fields(template)}
    if not all(values.values()):
        return ""
    return re.sub(r"\{([^{}]*)\}", lambda m: values[m.group(1).strip()], template)


def alert_title(data: Any, *, template: str = "") -> str:
    """The session's title for alert `data` (an object, or text that may hold JSON, as stored)."""
    if isinstance(data, str):
        try:
            parsed = json.loads(data) if data.lstrip()[:1] in ("{", "[") else data
        except ValueError:
            parsed = data
        data = parsed
    if isinstance(data, list) and data:
        data = data[0]  # a list of alerts: the first names them
    title = render_template(template, data) if template else ""
    if not title:
        title = _from_json(data) if isinstance(data, dict) else _first_line(data) if isinstance(data, str) else ""
    return clean(title)
