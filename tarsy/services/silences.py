"""Silences (maintenance windows): create, end early, and find the one an arriving alert falls under.

Intake (`intake.alerts.session_receive`, and a check's run) asks `silence_for_alert` before queueing a new session:
under a `skip` silence the session is stored as `silenced` — shown in the lists with its silence, never
dispatched, never in triage's needs review (the team declared these alerts expected; listing them for review
would be the noise the silence exists to remove; anyone can still claim one). Under a `low_priority` silence it
is queued behind every other alert (tarsy.selectors.queue) and then followed like any investigation.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agents.alert_labels import alert_labels
from agents.config.schema import SCHEDULED_CHECK_ALERT_TYPE
from agents.mcp.masking.boundary import mask_text
from tarsy.config import get_config
from tarsy.errors import Conflict, NotFound, ValidationFailed
from tarsy.models import SILENCE_MAX_MATCHERS, SILENCE_MAX_REASON_CHARS, Silence, SilenceMode

from .fingerprints import field_value

_PATH_RE = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")  # the dotted data paths dedup and titles use
MAX_VALUE_CHARS = 500


def _problem(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(message, {field: [message]})


def _check_matchers(matchers: Any) -> dict[str, str]:
    if not isinstance(matchers, dict):
        raise _problem("matchers", "matchers must be an object of data path → value")
    if len(matchers) > SILENCE_MAX_MATCHERS:
        raise _problem("matchers", f"at most {SILENCE_MAX_MATCHERS} matchers")
    for path, value in matchers.items():
        if not _PATH_RE.match(path) or len(path) > 200:
            raise _problem("matchers", f"{path!r} is not a dotted data path like labels.namespace")
        if not isinstance(value, str) or not value or len(value) > MAX_VALUE_CHARS:
            raise _problem("matchers", f"the value of {path!r} must be a text of 1-{MAX_VALUE_CHARS} characters")
    return {path: mask_text(value) for path, value in matchers.items()}  # alerts are matched masked too


def _check_alert_type(alert_type: str) -> str:
    alert_type = (alert_type or "").strip()
    known = {*get_config().alert_types(), SCHEDULED_CHECK_ALERT_TYPE}
    if alert_type and alert_type not in known:
        raise _problem("alert_type", f"unknown alert type {alert_type!r}; valid: {', '.join(sorted(known))}")
    return alert_type


@transaction.atomic
def silence_create(*, actor: str, reason: str, ends_at: datetime, starts_at: datetime | None = None,
                   alert_type: str = "", matchers: dict[str, Any] | None = None,
                   mode: str = SilenceMode.SKIP) -> Silence:
    """A silence needs an alert type or a matcher (one that silences everything is refused: a mistyped
    request must not stop every investigation) and a reason the next shift can read."""
    fields = silence_validate(reason=reason, ends_at=ends_at, starts_at=starts_at, alert_type=alert_type,
                              matchers=matchers, mode=mode)
    return Silence.objects.create(created_by=actor[:255], **fields)


def silence_validate(*, reason: str, ends_at: datetime, starts_at: datetime | None = None, alert_type: str = "",
                     matchers: dict[str, Any] | None = None, mode: str = SilenceMode.SKIP) -> dict[str, Any]:
    """The fields of a new silence, checked and masked; ValidationFailed saying what is wrong otherwise."""
    now = timezone.now()
    starts_at = starts_at or now
    if mode not in SilenceMode.values:
        raise _problem("mode", f"mode must be one of: {', '.join(SilenceMode.values)}")
    if ends_at <= starts_at:
        raise _problem("ends_at", "ends_at must be after starts_at")
    if ends_at <= now:
        raise _problem("ends_at", "ends_at must be in the future")
    matchers = _check_matchers(matchers or {})
    alert_type = _check_alert_type(alert_type)
    if not alert_type and not matchers:
        raise _problem("matchers", "give an alert_type or at least one matcher: a silence of every alert is refused")
    reason = (reason or "").strip()
    if not reason or len(reason) > SILENCE_MAX_REASON_CHARS:
        raise _problem("reason", f"reason is required (1-{SILENCE_MAX_REASON_CHARS} characters)")
    return {"alert_type": alert_type, "matchers": matchers, "mode": mode, "starts_at": starts_at,
            "ends_at": ends_at, "reason": mask_text(reason)}


@transaction.atomic
def silence_end(*, silence_id: Any, actor: str) -> Silence:
    """End a silence now (a scheduled one never starts); alerts from now on are investigated. Sessions it
    silenced stay as they are: they remain in the lists for whoever wants to look."""
    try:
        silence = Silence.objects.select_for_update().get(id=silence_id)
    except (Silence.DoesNotExist, ValueError, TypeError) as exc:
        raise NotFound(f"silence {silence_id} not found") from exc
    now = timezone.now()
    if silence.ends_at <= now:
        raise Conflict(f"silence {silence.id} has already ended", {"ends_at": silence.ends_at.isoformat()})
    silence.ends_at, silence.ended_by = now, actor[:255]
    silence.save(update_fields=["ends_at", "ended_by"])
    return silence


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)) or value is None:
        return json.dumps(value)
    return None  # an object or a list never equals a matcher's text


LABELS_PREFIX = "labels."


def silence_matches(silence: Silence, *, alert_type: str, data: Any) -> bool:
    """Exact match of the type (when set) and of every matcher against the masked alert data: `labels.<name>`
    against the alert's labels whatever its source (agents.alert_labels), any other path against the stored
    data."""
    if silence.alert_type and silence.alert_type != alert_type:
        return False
    labels = alert_labels(data)

    def value_of(path: str) -> str | None:
        if path.startswith(LABELS_PREFIX):
            return labels.get(path.removeprefix(LABELS_PREFIX))
        return _text(field_value(data, path))

    return all(value_of(path) == value for path, value in (silence.matchers or {}).items())


def silence_for_alert(*, alert_type: str, data: Any) -> Silence | None:
    """The active silence the alert falls under, a `skip` one before a `low_priority` one; None when none."""
    now = timezone.now()
    active = Silence.objects.filter(Q(alert_type="") | Q(alert_type=alert_type), starts_at__lte=now, ends_at__gt=now)
    matching = [s for s in active.order_by("id") if silence_matches(s, alert_type=alert_type, data=data)]
    matching.sort(key=lambda s: s.mode != SilenceMode.SKIP)
    return matching[0] if matching else None
