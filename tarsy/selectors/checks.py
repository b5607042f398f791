"""Proactive checks as configured, each with its last run (the API and the dashboard's Checks page)."""

from __future__ import annotations

from dataclasses import dataclass

from agents.config.schema import CheckConfig
from tarsy.config import get_config
from tarsy.models import AlertSession, CheckResult, TriageStatus


@dataclass
class CheckRow:
    check: CheckConfig
    last_run: AlertSession | None
    open_problem: AlertSession | None

    @property
    def last_result(self) -> str:
        """healthy / problem / duplicate once the last run ended; its status (pending, in_progress, silenced…)
        before that, or when it ended without a verdict (failed, timed out: a problem too)."""
        run = self.last_run
        if run is None:
            return ""
        if run.check_result:
            return run.check_result
        return CheckResult.PROBLEM if run.is_terminal and run.status != "silenced" else run.status


def _last(name: str, **filters) -> AlertSession | None:
    return AlertSession.objects.filter(check_name=name, **filters).order_by("-created_at").first()


def checks_overview() -> list[CheckRow]:
    """Every configured check, in file order (a few; two small queries each)."""
    open_triage = (TriageStatus.NEEDS_REVIEW, TriageStatus.IN_PROGRESS)
    return [CheckRow(check=c, last_run=_last(c.name), open_problem=_last(c.name, triage_status__in=open_triage))
            for c in get_config().checks]

