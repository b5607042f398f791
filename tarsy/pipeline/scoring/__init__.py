"""Automatic scoring of a completed session: deterministic signals, one scorer LLM call, the rubric's combination.

Enqueued as `ScoreSession` when a session completes (and by the re-score endpoint); every outcome, failures
included, is stored with the score through tarsy.services.quality — the session's own status never changes.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import InterfaceError, OperationalError

from agents.llm.recorded import LLMTarget, recorded_call
from agents.llm.types import LLMRequest
from tarsy.config import get_config
from tarsy.models import AlertSession, SessionStatus
from tarsy.services import interactions, quality, sessions

from .prompt import scoring_messages
from .rubric import ScoringError, combine, parse_verdict

log = logging.getLogger(__name__)


def citation_signal(session: AlertSession) -> dict[str, Any]:
    """The stored citation check as counts; `unknown` when there is none (never counted as a pass).
    `uncited_findings` counts claims that cite nothing (a fault); `uncited_evidence` tool results the analysis did
    not cite (a hint for the scorer, not a fault)."""
    stored = getattr(session, "citations", None)
    if not isinstance(stored, dict):
        return {"state": "unknown"}
    valid, invalid = len(stored.get("valid") or []), len(stored.get("invalid") or [])
    return {"state": "verified", "valid": valid, "invalid": invalid,
            "cited": stored.get("cited_count", valid + invalid), "uncited_evidence": len(stored.get("uncited") or []),
            "evidence": stored.get("evidence_count", 0), "uncited_findings": len(stored.get("uncited_findings") or [])}


def deterministic_signals(session: AlertSession, evidence: quality.Evidence) -> dict[str, Any]:
    return {"citations": citation_signal(session), "tool_calls": evidence.tool_calls,
            "failed_tool_calls": evidence.failed_tool_calls, "budget_exhausted": evidence.budget_exhausted,
            "total_tokens": session.counters.total_tokens}


def session_score(*, session_id: Any) -> None:
    """Score the session if a score is pending for it; stores the score or the reason there is none."""
    session = sessions.session_find(session_id=session_id)
    if session is None or not quality.score_claim(session_id=session_id):
        return
    config = get_config().scoring
    provider_name = config.llm_provider
    model = get_config().llm_providers[provider_name].model if provider_name in get_config().llm_providers else ""
    signals: dict[str, Any] = {}
    try:
        if not config.enabled:
            raise ScoringError("automatic scoring is not configured")
        if session.status != SessionStatus.COMPLETED or not session.final_analysis:
            raise ScoringError(f"session is {session.status} without a final analysis to score")
        evidence = quality.session_evidence(session_id=session.id)
        signals = deterministic_signals(session, evidence)
        messages = scoring_messages(alert_type=session.alert_type, alert_data=session.alert_data,
                                    final_analysis=session.final_analysis, results=evidence.results, signals=signals)
        verdict = parse_verdict(ask_scorer(session, messages))
        scored = combine(verdict, signals)
    except (OperationalError, InterfaceError):
        raise  # transient: the task retries
    except ScoringError as exc:
        log.warning("scoring %s failed: %s", session.id, exc)
        quality.score_fail(session_id=session.id, error=str(exc), signals=signals, provider=provider_name, model=model)
        return
    except Exception as exc:  # a scoring bug must not leave the score pending for ever
        log.exception("scoring %s failed", session.id)
        quality.score_fail(session_id=session.id, error=f"internal error: {type(exc).__name__}: {exc}",
                           signals=signals, provider=provider_name, model=model)
        return
    signals.update(adjustments=scored.adjustments, unknown_tags=scored.unknown_tags)
    quality.score_store(session_id=session.id, score=scored.score, support=scored.support,
                        scorer_score=verdict.score, rationale=verdict.rationale.strip()[:4000], tags=scored.tags,
                        signals=signals, provider=provider_name, model=model)


def ask_scorer(session: AlertSession, messages, provider: str = "") -> str:
    """One recorded call to the scoring provider (or `provider`); its reply text, or a ScoringError with the
    provider's reason. Recorded without adding to the session's totals: scoring judges the investigation, it is
    not part of it."""
    config = get_config()
    name = provider or config.scoring.llm_provider
    target = LLMTarget.of(name, config.provider(name))
    request = LLMRequest(messages=messages, provider=target.config, provider_name=target.name,
                         session_id=str(session.id), interaction_type="scoring", iteration=1,
                         max_output_tokens=config.scoring.max_output_tokens,
                         deadline=time.time() + config.scoring.timeout)
    call = recorded_call(request, target, record=lambda record: interactions.llm_interaction_record(
        session_id=session.id, execution_id=None, iteration=0, record=record, add_to_totals=False))
    if call.error:
        raise ScoringError(f"the scoring provider failed: {call.error.message}")
    return call.response.text
