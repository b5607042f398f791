"""The vendors' documented webhook formats, validated at the boundary and read into `Batch` items.

- Alertmanager webhook (`version: "4"`) and Grafana unified alerting webhook (`version: "1"`, the same shape plus
  Grafana's fields): a group of alerts, each `firing` or `resolved`, with `labels`, `annotations`, `startsAt`,
  `endsAt`, `generatorURL` and `fingerprint`.
- PagerDuty V3 webhook: one `event` with `event_type`; `incident.triggered` (and `incident.reopened`) start an
  investigation, `incident.resolved` resolves it, other event types are acknowledged and ignored.

A payload that is not the format is a `PayloadInvalid` naming the fields at fault (the API answers 400).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.alert_labels import pagerduty_labels

from .items import Batch, Firing, Resolved

FINGERPRINT_MAX = 128  # AlertSession.fingerprint's length
STARTING_EVENTS = frozenset({"incident.triggered", "incident.reopened"})
RESOLVING_EVENTS = frozenset({"incident.resolved"})


class PayloadInvalid(Exception):
    """The body is not the source's documented format; `detail` maps field paths to reasons."""

    def __init__(self, message: str, detail: dict[str, list[str]]):
        super().__init__(message)
        self.message = message
        self.detail = detail


class _Vendor(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)  # vendors add fields; we keep them


class GroupAlert(_Vendor):
    status: Literal["firing", "resolved"]
    labels: dict[str, str] = Field(min_length=1)
    annotations: dict[str, str] = Field(default_factory=dict)
    startsAt: str = ""
    endsAt: str = ""
    generatorURL: str = ""
    fingerprint: str = ""


class AlertGroup(_Vendor):
    version: str
    status: Literal["firing", "resolved"]
    receiver: str = ""
    groupKey: str = ""
    groupLabels: dict[str, str] = Field(default_factory=dict)
    commonLabels: dict[str, str] = Field(default_factory=dict)
    commonAnnotations: dict[str, str] = Field(default_factory=dict)
    externalURL: str = ""
    truncatedAlerts: int = 0
    alerts: list[GroupAlert] = Field(min_length=1)


class PagerDutyEvent(_Vendor):
    id: str = ""
    event_type: str = Field(min_length=1)
    resource_type: str = ""
    occurred_at: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


class PagerDutyWebhook(_Vendor):
    event: PagerDutyEvent


GROUP_VERSIONS = {"alertmanager": "4", "grafana": "1"}


def _validate(model: type[BaseModel], body: Any, source: str) -> Any:
    if not isinstance(body, dict):
        raise PayloadInvalid(f"the body is not a valid {source} webhook payload", {"body": ["Expected a JSON object."]})
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        detail: dict[str, list[str]] = {}
        for error in exc.errors():
            detail.setdefault(".".join(str(p) for p in error["loc"]) or "body", []).append(error["msg"])
        raise PayloadInvalid(f"the body is not a valid {source} webhook payload", detail) from None


def _labels_fingerprint(labels: dict[str, str]) -> str:
    """For a sender that leaves `fingerprint` out: the same labels give the same alert identity."""
    return hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]


def _identity(source: str, *parts: str) -> str:
    return ":".join([source, *parts])[:FINGERPRINT_MAX]


def read_group(source: str, body: Any, *, session_per: str) -> Batch:
    """An Alertmanager or Grafana delivery: one item per alert, or one for the whole group (`session_per`)."""
    group: AlertGroup = _validate(AlertGroup, body, source)
    expected = GROUP_VERSIONS[source]
    if group.version != expected:
        raise PayloadInvalid(f"unsupported {source} webhook version {group.version!r}",
                             {"version": [f"Expected {expected!r}."]})
    context = {"source": source, "receiver": group.receiver, "externalURL": group.externalURL,
               "groupLabels": group.groupLabels}
    if session_per == "group":
        return _read_whole_group(source, group, context)
    batch = Batch()
    for alert in group.alerts:
        fingerprint = _identity(source, alert.fingerprint or _labels_fingerprint(alert.labels))
        if alert.status == "resolved":
            batch.resolved.append(Resolved(fingerprint=fingerprint, at=alert.endsAt))
        else:
            batch.firing.append(Firing(fingerprint=fingerprint, labels=alert.labels,
                                       data={**context, "alert": alert.model_dump()},
                                       runbook_url=alert.annotations.get("runbook_url", "")))
    return batch


def _read_whole_group(source: str, group: AlertGroup, context: dict[str, Any]) -> Batch:
    key = group.groupKey or json.dumps(group.groupLabels, sort_keys=True)
    fingerprint = _identity(source, "group", hashlib.sha256(key.encode()).hexdigest()[:32])
    if group.status == "resolved":
        ended = max((a.endsAt for a in group.alerts), default="")
        return Batch(resolved=[Resolved(fingerprint=fingerprint, at=ended)])
    firing = [a.model_dump() for a in group.alerts if a.status == "firing"]
    data = {**context, "groupKey": group.groupKey, "commonLabels": group.commonLabels,
            "commonAnnotations": group.commonAnnotations, "truncatedAlerts": group.truncatedAlerts, "alerts": firing}
    labels = group.commonLabels or group.groupLabels
    return Batch(firing=[Firing(fingerprint=fingerprint, labels=labels, data=data,
                                runbook_url=group.commonAnnotations.get("runbook_url", ""))])


def pagerduty_event(body: Any) -> PagerDutyEvent:
    """The one event of a PagerDuty V3 delivery, validated."""
    return _validate(PagerDutyWebhook, body, "pagerduty").event


def read_pagerduty(body: Any) -> Batch:
    """A PagerDuty V3 delivery (one event)."""
    event = pagerduty_event(body)
    if event.event_type not in STARTING_EVENTS | RESOLVING_EVENTS:
        return Batch(ignored=[event.event_type])
    incident = event.data
    incident_id = incident.get("id")
    if incident.get("type") != "incident" or not isinstance(incident_id, str) or not incident_id:
        raise PayloadInvalid("not a pagerduty incident event",
                             {"event.data": ["An incident event's data is the incident, with its id."]})
    fingerprint = _identity("pagerduty", incident_id)
    if event.event_type in RESOLVING_EVENTS:
        return Batch(resolved=[Resolved(fingerprint=fingerprint, at=event.occurred_at)])
    data = {"source": "pagerduty", "event_id": event.id, "event_type": event.event_type,
            "occurred_at": event.occurred_at, "incident": incident}
    return Batch(firing=[Firing(fingerprint=fingerprint, labels=pagerduty_labels(incident), data=data)])
