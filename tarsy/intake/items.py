"""What a webhook asks of TARSy, vendor-neutral: investigate a firing alert, or note that one resolved."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SOURCES = ("alertmanager", "grafana", "pagerduty")


@dataclass(frozen=True)
class Firing:
    """An alert to investigate. `labels` are what the source's rules match; `data` is stored as the alert."""

    fingerprint: str
    labels: dict[str, str]
    data: dict[str, Any]
    runbook_url: str = ""


@dataclass(frozen=True)
class Resolved:
    """The source says the alert behind `fingerprint` is over (`at`: its own timestamp, as sent)."""

    fingerprint: str
    at: str = ""


@dataclass(frozen=True)
class Mapped:
    """A firing alert with its source's mapping applied: what `session_receive` is called with."""

    fingerprint: str
    data: dict[str, Any]
    alert_type: str | None
    severity: str | None
    runbook: str | None
    refused_runbook: str = ""  # the alert's runbook_url on a host outside the allow-list, set aside


@dataclass(frozen=True)
class Batch:
    """One webhook delivery, read: what to start, what to resolve, and event types it did not act on."""

    firing: list[Firing] = field(default_factory=list)
    resolved: list[Resolved] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
