"""Alert intake: an alert validated, masked and routed to its chain, then either joined to the session already on
it (a repeat, or a related alert of its group) or queued as a new pending session, dispatched after commit."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlparse

from django.db import transaction
from django.utils import timezone

from agents.config.schema import AlertMaskingConfig
from tarsy.config import get_config
from tarsy.decisions import DispatchSessions, enact_on_commit
from tarsy.errors import PayloadTooLarge, ValidationFailed
from tarsy.intake.titles import alert_title
from tarsy.metrics import SESSIONS_SUBMITTED
from tarsy.models import AlertSession, OccurrenceKind, SessionCounters, SessionStatus, Severity, SilenceMode

from .. import fingerprints, occurrences
from ..sessions import publish_session_status
from ..silences import silence_for_alert

MAX_ALERT_DATA_BYTES = 1024 * 1024  # larger alerts are refused with 413


def _check_alert_size(text: str) -> None:
    if len(text.encode("utf-8")) > MAX_ALERT_DATA_BYTES:
        raise PayloadTooLarge(f"alert data exceeds {MAX_ALERT_DATA_BYTES} bytes", {"data": ["Too large."]})


def _alert_masked(data: Any, masking: AlertMaskingConfig) -> tuple[Any, str]:
    """The alert masked in the shape it came, and as stored text. Alert data that cannot be masked is
    refused, never stored unmasked; an unexpected masker failure propagates (a JSON 500, nothing stored)."""
    from agents.mcp.masking import MaskingError, mask_alert_data

    if data is None or data == "" or data == {} or data == []:
        raise ValidationFailed("data is required", {"data": ["This field is required and must not be empty."]})
    if isinstance(data, str):
        _check_alert_size(data)  # before masking: refusing is cheaper than masking megabytes first
    try:
        masked = mask_alert_data(data, masking)
        text = masked if isinstance(masked, str) else json.dumps(masked, indent=2, ensure_ascii=False)
    except MaskingError as exc:
        raise ValidationFailed("alert data cannot be masked", {"data": [str(exc)]}) from exc
    except RecursionError as exc:  # masking disabled: the encoder follows the nesting itself
        raise ValidationFailed("alert data is nested too deeply", {"data": ["Nested too deeply."]}) from exc
    _check_alert_size(text)
    return masked, text


def _check_runbook(url: str, allowed: list[str]) -> None:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValidationFailed("invalid runbook URL", {"runbook": ["Must be an http(s) URL."]})
    host = parsed.hostname.lower()
    if not any(host == d or host.endswith("." + d) for d in allowed):
        raise ValidationFailed(
            "runbook host not allowed", {"runbook": [f"Host {host!r} is not in the allowed domains: {allowed}."]}
        )


@dataclass(frozen=True)
class AlertReceipt:
    """What intake answers: the session that investigates the alert, and whether the alert joined it as a repeat
    (`deduplicated`) or as another alert of its group (`related`) instead of starting it."""

    session: AlertSession
    deduplicated: bool = False
    related: bool = False

    @property
    def status(self) -> str:
        """What became of the alert, as every intake endpoint answers it: `attached` (joined a session),
        `silenced` (a new session kept without investigation, under a silence) or `queued`."""
        if self.deduplicated or self.related:
            return "attached"
        return "silenced" if self.session.status == SessionStatus.SILENCED else "queued"


@dataclass(frozen=True)
class _Alert:
    """An alert that passed validation: masked, typed, routed to its chain, with its identity."""

    text: str
    data: Any  # masked, in the shape it came (silences match it)
    title: str
    alert_type: str
    chain_id: str
    severity: str
    fingerprint: str
    group_key: str
    dedup_window: float | None  # None: the chain has dedup off
    group_window: float
    runbook: str
    mcp: dict[str, Any] | None
    author: str
    check_name: str = ""


def session_receive(
    *, data: Any, alert_type: str | None = None, runbook: str | None = None, mcp: dict[str, Any] | None = None,
    author: str = "api-client", fingerprint: str = "", severity: str | None = None, group_key: str = "",
) -> AlertReceipt:
    """Intake's one entry point (REST and webhook adapters). A repeat of an alert whose session is queued, in
    progress or recently completed joins that session as an occurrence; an alert of a group whose first session
    still investigates joins it as related; any other alert is queued as a new session."""
    alert = _alert_validate(data=data, alert_type=alert_type, runbook=runbook, mcp=mcp, author=author,
                            fingerprint=fingerprint, severity=severity, group_key=group_key)
    if alert.dedup_window is None and not alert.group_key:
        # Nothing to look up, so nothing to lock: alike alerts of a chain without dedup are taken in parallel.
        receipt = AlertReceipt(session=_session_create(alert, silences=True))
    else:
        with transaction.atomic():  # the look-up and what follows from it, serialised per fingerprint / group
            occurrences.alert_identity_lock(alert_type=alert.alert_type, chain_id=alert.chain_id,
                                            fingerprint=alert.fingerprint if alert.dedup_window is not None else "",
                                            group_key=alert.group_key)
            receipt = _attach_to_existing(alert) or AlertReceipt(session=_session_create(alert, silences=True))
    if not (receipt.deduplicated or receipt.related):
        SESSIONS_SUBMITTED.labels(alert.alert_type).inc()
    return receipt


def _attach_to_existing(alert: _Alert) -> AlertReceipt | None:
    fields = {"alert_type": alert.alert_type, "fingerprint": alert.fingerprint, "severity": alert.severity,
              "alert_data": alert.text, "author": alert.author}
    if alert.dedup_window is not None:
        same = occurrences.session_with_fingerprint(alert_type=alert.alert_type, fingerprint=alert.fingerprint,
                                                    window=alert.dedup_window)
        if same is not None:
            session = occurrences.occurrence_attach(session=same, kind=OccurrenceKind.OCCURRENCE, **fields)
            return AlertReceipt(session=session, deduplicated=True)
    if alert.group_key:
        lead = occurrences.group_lead(chain_id=alert.chain_id, group_key=alert.group_key, window=alert.group_window)
        if lead is not None:
            session = occurrences.occurrence_attach(session=lead, kind=OccurrenceKind.RELATED, **fields)
            return AlertReceipt(session=session, related=True)
    return None


def _severity(severity: str | None, data: Any, alert_type: str) -> str:
    """The sender's severity; else a known `severity` field of the data; else the alert type's configured one."""
    if severity:
        if severity not in Severity.values:
            raise ValidationFailed(f"unknown severity {severity!r}",
                                   {"severity": [f"Valid severities: {', '.join(Severity.values)}."]})
        return severity
    named = data.get("severity") if isinstance(data, dict) else None
    if isinstance(named, str) and named.strip().lower() in Severity.values:
        return named.strip().lower()
    return get_config().queue.severities.get(alert_type, Severity.WARNING)


def _alert_validate(
    *, data: Any, alert_type: str | None, runbook: str | None, mcp: dict[str, Any] | None, author: str,
    fingerprint: str, severity: str | None, group_key: str, chain_id: str | None = None,
) -> _Alert:
    """`chain_id`: a chain chosen by TARSy itself (a check's), not by the alert type."""
    config = get_config()
    alert_type = alert_type or config.defaults.alert_type
    if chain_id is None:
        chain_id = config.chain_for_alert_type(alert_type)
    elif chain_id not in config.chains:
        raise ValidationFailed(f"unknown chain {chain_id!r}", {"chain": ["No such chain."]})
    if chain_id is None:
        valid = sorted(config.alert_types())
        raise ValidationFailed(
            f"unknown alert type {alert_type!r}", {"alert_type": [f"Valid alert types: {', '.join(valid)}."]}
        )
    severity = _severity(severity, data, alert_type)
    masked, text = _alert_masked(data, config.defaults.alert_masking)
    if runbook:
        _check_runbook(runbook, config.system.runbooks.allowed_domains)
    if mcp:
        from agents.mcp.selection import validate_mcp_selection  # the MCP client stack: ~1 s of imports

        problems = validate_mcp_selection(mcp, config)
        if problems:
            raise ValidationFailed("invalid MCP selection", {"mcp": problems})
    chain = config.chain(chain_id)
    dedup, correlation = chain.dedup, chain.correlation
    from agents.mcp.masking.boundary import mask_text

    if fingerprint:  # a sender's identity may quote labels holding secrets: stored masked like the alert
        fingerprint = mask_text(fingerprint)
    else:
        fingerprint = fingerprints.derive_fingerprint(alert_type=alert_type, data=masked,
                                                      key=dedup.key if dedup else [])
    if correlation is None:
        group_key = ""
    elif group_key:
        group_key = mask_text(group_key)
    else:
        group_key = fingerprints.derive_group_key(data=masked, labels=correlation.labels)
    title = alert_title(masked, template=chain.title_template)
    return _Alert(text=text, data=masked, title=title, alert_type=alert_type, chain_id=chain_id, severity=severity,
                  fingerprint=fingerprint[:128], group_key=group_key[:200],
                  dedup_window=dedup.window if dedup else None,
                  group_window=correlation.window if correlation else 0.0, runbook=runbook or "", mcp=mcp or None,
                  author=author[:255])


def _session_create(alert: _Alert, *, silences: bool) -> AlertSession:
    """A pending session queued for dispatch; with `silences`, one under a `skip` silence is stored `silenced`
    (never dispatched) and one under a `low_priority` silence queued behind the others (tarsy.services.silences)."""
    from agents.mcp.masking.boundary import mask_url

    with transaction.atomic():
        silence = silence_for_alert(alert_type=alert.alert_type, data=alert.data) if silences else None
        skipped = silence is not None and silence.mode == SilenceMode.SKIP
        session = AlertSession(
            alert_data=alert.text, alert_type=alert.alert_type, chain_id=alert.chain_id, agent_type=alert.chain_id,
            title=alert.title,
            runbook_url=mask_url(alert.runbook) if alert.runbook else "", mcp_selection=alert.mcp,
            author=alert.author, fingerprint=alert.fingerprint, severity=alert.severity, group_key=alert.group_key,
            silenced_by=silence, check_name=alert.check_name,
        )
        if skipped:
            session.status, session.completed_at = SessionStatus.SILENCED, timezone.now()
        session.save(force_insert=True)
        # Its counters row, made with it; the first event, below, numbered here, as no other writer can see it yet.
        SessionCounters.objects.create(session=session, event_seq=1)
        publish_session_status(session, seq=1)
        if not skipped:
            enact_on_commit([DispatchSessions()])
    return session


def session_submit(
    *, data: Any, alert_type: str | None = None, runbook: str | None = None, mcp: dict[str, Any] | None = None,
    author: str = "api-client", fingerprint: str = "", severity: str | None = None, chain_id: str | None = None,
    check_name: str = "", silences: bool = False,
) -> AlertSession:
    """Validate an alert and queue it as a new pending session whatever else is queued (evals, replays, tests,
    a check's run: `chain_id` and `check_name`, and `silences` so a maintenance window holds its checks too);
    dispatch happens after commit. Alerts from the outside world come through `session_receive`."""
    alert = _alert_validate(data=data, alert_type=alert_type, runbook=runbook, mcp=mcp, author=author,
                            fingerprint=fingerprint, severity=severity, group_key="", chain_id=chain_id)
    if check_name:
        alert = replace(alert, check_name=check_name, title=f"Check {check_name}")
    session = _session_create(alert, silences=silences)
    SESSIONS_SUBMITTED.labels(alert.alert_type).inc()
    return session
