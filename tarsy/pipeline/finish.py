"""Close a session: final analysis from the last completed stage (after an action stage, the investigation's
first), executive summary (ending with the session's actions, listed by code), terminal status.

Decides the session's outcome from its stages; the writes go through tarsy.services.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import transaction

from agents.llm.recorded import LLMTarget, RecordedCall, call_with_fallback
from agents.llm.types import Chunk, LLMRequest
from controllers.llm_call import fallback_warning
from tarsy.config import get_config
from tarsy.models import (
    TERMINAL_EXEC_STATUSES,
    AlertSession,
    ExecStatus,
    SessionStatus,
    Stage,
    StageKind,
    StageType,
)
from tarsy.services import actions, checks, citations, interactions, quality, sessions, stages, timeline

from .actions.report import actions_section

log = logging.getLogger(__name__)

EXECUTIVE_SUMMARY_MAX_TOKENS = 150  # a glanceable summary
EXECUTIVE_SUMMARY_TIMEOUT_S = 60.0
_STAGE_TO_SESSION: dict[str, SessionStatus] = {
    ExecStatus.FAILED: SessionStatus.FAILED,
    ExecStatus.TIMED_OUT: SessionStatus.TIMED_OUT,
    ExecStatus.CANCELLED: SessionStatus.CANCELLED,
}


def session_finish(*, session_id: Any) -> None:
    """Idempotent: a session not (or no longer) running, or with a stage still open, is left as it is."""
    session = sessions.session_find(session_id=session_id)
    if session is None:
        return
    if session.status == SessionStatus.CANCELLING:
        with transaction.atomic():
            sessions.session_work_stop(session_id=session.id, status=ExecStatus.CANCELLED, error="Cancelled by user")
            sessions.session_set_status(session_id=session.id, status=SessionStatus.CANCELLED,
                                        from_statuses=(SessionStatus.CANCELLING,), error_message="Cancelled by user")
        return
    if session.status != SessionStatus.IN_PROGRESS:
        return
    closed = stages.stages_of_session(session_id=session.id)
    if not closed or any(s.status not in TERMINAL_EXEC_STATUSES for s in closed):
        return  # not done yet (a duplicate or early call)
    last = closed[-1]
    completed = [s for s in closed if s.status == ExecStatus.COMPLETED and s.final_analysis
                 and not (s.kind == StageKind.INVESTIGATION and s.parallel_type)]
    final_analysis = _final_analysis(completed)
    if last.status == ExecStatus.COMPLETED:
        # A healthy check run is closed quietly: its short analysis is all anyone reads, no summary call per run.
        quiet = checks.check_healthy(session=session, status=SessionStatus.COMPLETED, final_analysis=final_analysis)
        summary, summary_error = ("", "") if quiet else _executive_summary(session, final_analysis)
        changes = dict(status=SessionStatus.COMPLETED, executive_summary=summary, executive_summary_error=summary_error)
    else:
        changes = dict(status=_STAGE_TO_SESSION.get(last.status, SessionStatus.FAILED),
                       error_message=f"Stage {last.name!r} {last.status}: {last.error_message}"[:4000])
    with transaction.atomic():  # the analysis is never shown without its verified citations
        check = checks.check_close(session=session, status=changes["status"], final_analysis=final_analysis)
        finished = sessions.session_set_status(session_id=session.id, from_statuses=(SessionStatus.IN_PROGRESS,),
                                               final_analysis=final_analysis, **changes, **check.fields)
        if finished and final_analysis:  # no analysis, nothing cited: the check stays absent (null)
            citations.citations_verify(session_id=session.id)
        if finished and check.duplicate_of is not None:
            checks.check_record_duplicate(session=finished, open_problem=check.duplicate_of)
    if finished and not check.healthy:  # a healthy check run is history, not something to rate
        quality.score_on_completion(session_id=session.id)  # after the commit: the scorer reads the check


def _final_analysis(completed: list[Stage]) -> str:
    """The last completed stage's analysis. After an action stage, the investigation it acted on comes first: an
    action stage reports what it changed, not the root cause it was given, which the session must not lose."""
    if not completed:
        return ""
    last = completed[-1]
    investigated = [s for s in completed[:-1] if s.type != StageType.ACTION]
    if last.type != StageType.ACTION or not investigated:
        return last.final_analysis
    return f"{investigated[-1].final_analysis.rstrip()}\n\n## Remediation (stage {last.name})\n\n{last.final_analysis}"


class _SummaryFallbackWarning:
    """Says on the session's timeline that the executive summary moved to a fallback provider, as an iteration
    says it on its execution's timeline."""

    def __init__(self, session_id: Any) -> None:
        self._session_id = session_id

    def chunk(self, chunk: Chunk) -> str | None:
        return None  # the summary is not streamed and never stopped midway

    def fell_back(self, failed: RecordedCall, to: LLMTarget) -> None:
        content, metadata = fallback_warning(failed, to)
        timeline.timeline_event_create(session_id=self._session_id, event_type="error", content=content,
                                       metadata=metadata, status="failed")


def _executive_summary(session: AlertSession, final_analysis: str) -> tuple[str, str]:
    """Its own recorded LLM call; a failure is recorded, never fails the session."""
    from agents.prompts.builder import executive_summary_messages

    if not final_analysis:
        return "", "no final analysis to summarize"
    config = get_config()
    chain = config.chain(session.chain_id)
    provider_name = chain.executive_summary_provider or chain.llm_provider or config.default_provider
    fallbacks = chain.fallback_providers if chain.fallback_providers is not None else config.defaults.fallback_providers
    targets = [LLMTarget.of(name, config.provider(name)) for name in dict.fromkeys([provider_name, *fallbacks])]
    target = targets[0]
    messages = executive_summary_messages(alert_type=session.alert_type, final_analysis=final_analysis)
    request = LLMRequest(messages=messages, provider=target.config, provider_name=target.name,
                         session_id=str(session.id), interaction_type="executive_summary", iteration=1,
                         max_output_tokens=EXECUTIVE_SUMMARY_MAX_TOKENS,
                         deadline=time.time() + EXECUTIVE_SUMMARY_TIMEOUT_S)
    call = call_with_fallback(request, targets, record=lambda record: interactions.llm_interaction_record(
        session_id=session.id, execution_id=None, iteration=0, record=record),
        observer=_SummaryFallbackWarning(session.id))
    error = call.error.message if call.error else ""
    if error:
        log.warning("executive summary for %s failed: %s", session.id, error)
        timeline.timeline_event_create(session_id=session.id, event_type="error",
                                       content=f"Executive summary failed: {error}",
                                       metadata={"executive_summary_error": True}, status="failed")
        return "", error
    summary = _with_session_actions(call.response.text.strip(), session.id)
    timeline.timeline_event_create(session_id=session.id, event_type="executive_summary", content=summary)
    return summary, ""


def _with_session_actions(summary: str, session_id: Any) -> str:
    """The summary, then every action of the session and how it went: a summary that mentions them must not
    depend on the model remembering to."""
    section = actions_section(actions.actions_of_session(session_id=session_id))
    return f"{summary}\n\n{section}" if section else summary
