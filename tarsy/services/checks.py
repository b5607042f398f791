"""Proactive checks (`checks:` in tarsy.yaml): start a run, and close a finished run by its verdict.

A run is a session of alert type `scheduled_check` on the check's chain, its alert data the check's name and
instruction, queued through intake like any alert (silences apply: a maintenance window holds its checks too).
When it ends, `check_close` reads the verdict (agents.prompts.checks): a healthy run is closed quietly — kept
for history, outside triage, no Slack thread (tarsy.slack.receivers) — and anything else takes the normal path
into triage's needs review. A failing run while an earlier run's problem is still open (needs review or in
progress) does not open a second one: it is resolved as a duplicate and counted on the open session as an
occurrence, whose Slack thread says the check failed again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.config.schema import SCHEDULED_CHECK_ALERT_TYPE, CheckConfig
from agents.prompts.checks import HEALTHY, check_verdict
from tarsy.config import get_config
from tarsy.errors import Conflict, NotFound
from tarsy.models import (
    AlertSession,
    CheckResult,
    OccurrenceKind,
    Resolution,
    SessionStatus,
    TimelineEventType,
    TriageActivity,
    TriageStatus,
)

from . import occurrences, timeline
from .intake.alerts import session_submit

CHECK_AUTHOR = "scheduler"
OPEN_TRIAGE = (TriageStatus.NEEDS_REVIEW, TriageStatus.IN_PROGRESS)


def check_fingerprint(name: str) -> str:
    return f"check:{name}"


def check_get(*, name: str) -> CheckConfig:
    check = get_config().check(name)
    if check is None:
        raise NotFound(f"check {name!r} not found")
    return check


def _lock(name: str, chain_id: str) -> None:
    """Serialise what concerns one check (a run starting, a run closing) until the transaction ends."""
    occurrences.alert_identity_lock(alert_type=SCHEDULED_CHECK_ALERT_TYPE, fingerprint=check_fingerprint(name),
                                    chain_id=chain_id, group_key="")


@transaction.atomic
def check_run(*, name: str, author: str = CHECK_AUTHOR) -> AlertSession:
    """Queue a run of the check now. While its previous run is still queued or running, a new one is refused
    (Conflict): a check slower than its schedule, or a full queue, must not pile up runs."""
    check = check_get(name=name)
    _lock(check.name, check.chain)
    running = (AlertSession.objects.filter(check_name=check.name,
                                           status__in=(SessionStatus.PENDING, SessionStatus.IN_PROGRESS,
                                                       SessionStatus.CANCELLING))
               .values_list("id", flat=True).first())
    if running is not None:
        raise Conflict(f"check {check.name!r} is still running (session {running})", {"session_id": str(running)})
    return session_submit(data={"check": check.name, "instruction": check.instruction},
                          alert_type=SCHEDULED_CHECK_ALERT_TYPE, chain_id=check.chain, author=author,
                          fingerprint=check_fingerprint(check.name), check_name=check.name, silences=True)


@dataclass
class CheckClose:
    """The fields a finishing check run is closed with, and the open problem session it duplicates, if any."""

    fields: dict[str, Any] = field(default_factory=dict)
    duplicate_of: AlertSession | None = None

    @property
    def healthy(self) -> bool:
        return self.fields.get("check_result") == CheckResult.HEALTHY


def _open_problem(session: AlertSession) -> AlertSession | None:
    return (AlertSession.objects.filter(check_name=session.check_name, status__in=(SessionStatus.COMPLETED,
                                        SessionStatus.FAILED, SessionStatus.TIMED_OUT, SessionStatus.CANCELLED),
                                        triage_status__in=OPEN_TRIAGE)
            .exclude(id=session.id).order_by("created_at").first())


def check_healthy(*, session: AlertSession, status: str, final_analysis: str) -> bool:
    """A check run that completed with every verdict line HEALTHY (agents.prompts.checks)."""
    return bool(session.check_name) and status == SessionStatus.COMPLETED and check_verdict(final_analysis) == HEALTHY


def check_close(*, session: AlertSession, status: str, final_analysis: str) -> CheckClose:
    """Call inside the transaction that ends the run (before its status is set): see the module docstring.
    A session that is not a check run closes as any other."""
    if not session.check_name:
        return CheckClose()
    healthy = check_healthy(session=session, status=status, final_analysis=final_analysis)
    _lock(session.check_name, session.chain_id)
    open_problem = _open_problem(session)
    if healthy:
        if open_problem is not None:
            timeline.timeline_event_create(
                session_id=open_problem.id, event_type=TimelineEventType.ALERT_RESOLVED,
                content=f"Check {session.check_name!r} passed again (run {session.id}); this problem is still "
                        "open for whoever resolves it.",
                metadata={"source": f"check {session.check_name}", "fingerprint": session.fingerprint,
                          "resolved_at": timezone.now().isoformat(), "action": "annotated"})
        return CheckClose({"check_result": CheckResult.HEALTHY, "triage_status": ""})
    if open_problem is None:
        return CheckClose({"check_result": CheckResult.PROBLEM})
    return CheckClose({"check_result": CheckResult.DUPLICATE, "triage_status": TriageStatus.RESOLVED,
                       "resolution": Resolution.DUPLICATE,
                       "resolution_note": f"The check's problem is still open in session {open_problem.id}."},
                      duplicate_of=open_problem)


def check_record_duplicate(*, session: AlertSession, open_problem: AlertSession) -> None:
    """After the duplicate run's status is written: its triage log says why it is resolved, and the open
    session counts the failing run as an occurrence (its page and Slack thread show the check failed again)."""
    TriageActivity.objects.create(session=session, actor=CHECK_AUTHOR, action="resolve", from_status="",
                                  to_status=TriageStatus.RESOLVED, resolution=Resolution.DUPLICATE,
                                  note=session.resolution_note)
    occurrences.occurrence_attach(session=open_problem, kind=OccurrenceKind.OCCURRENCE, alert_type=session.alert_type,
                                  fingerprint=session.fingerprint, severity=session.severity,
                                  alert_data=f"Run {session.id} of check {session.check_name!r} failed again.",
                                  author=CHECK_AUTHOR)
