"""Automatic scoring of a completed session: deterministic signals, one scorer LLM call, the rubric's combination.

Enqueued as `ScoreSession` when a session completes (and by the re-score endpoint); every outcome, failures
included, is stored with the score through tarsy.services.quality — the session's own status never changes.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import InterfaceError, OperationalError

from agents.context import LLMInteractionRecord
from agents.llm.registry import backend_for, get_provider
from agents.llm.types import LLMRequest, LLMResponse
from agents.mcp.masking.boundary import mask_text
from tarsy.config import get_config
from tarsy.models import AlertSession, SessionStatus
from tarsy.services import interactions, quality, sessions

from .prompt import scoring_messages
from .rubric import ScoringError, combine, parse_verdict

log = logging.getLogger(__name__)


def citation_signal(session: AlertSession) -> dict[str, Any]:
    """The stored citation check as counts; `unknown` when there is none (never counted as a pass)."""
    stored = getattr(session, "citations", None)
    if not isinstance(stored, dict):
        return {"state": "unknown"}
    return {"state": "verified", **{key: len(stored.get(key) or []) for key in ("valid", "invalid", "uncited")}}


def deterministic_signals(session: AlertSession, evidence: quality.Evidence) -> dict[str, Any]:
    return {"citations": citation_signal(session), "tool_calls": evidence.tool_calls,
            "failed_tool_calls": evidence.failed_tool_calls, "budget_exhausted": evidence.budget_exhausted,
            "total_tokens": session.total_tokens}


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


def ask_scorer(session: AlertSession, messages) -> str:
    """One recorded call to the scoring provider; its reply text, or a ScoringError with the provider's reason."""
    config = get_config()
    name = config.scoring.llm_provider
    provider_cfg = config.provider(name)
    request = LLMRequest(messages=messages, provider=provider_cfg, provider_name=name, session_id=str(session.id),
                         interaction_type="scoring", iteration=1, max_output_tokens=config.scoring.max_output_tokens,
                         deadline=time.time() + config.scoring.timeout)
    provider = get_provider(name, provider_cfg, backend_for("synthesis", provider_cfg))
    started = time.monotonic()
    response = LLMResponse.collect(provider.generate(request))
    # A provider's error text comes from outside: masked before it is stored, logged or shown.
    error = mask_text(response.error.message) if response.error else ""
    interactions.llm_interaction_record(
        session_id=session.id, execution_id=None, iteration=0, add_to_totals=False,
        record=LLMInteractionRecord(
            interaction_type="scoring", provider=name, model=provider_cfg.model,
            conversation=[m.model_dump(exclude_none=True) for m in messages]
            + ([] if error else [response.as_assistant_message().model_dump(exclude_none=True)]),
            thinking_content=response.thinking, usage=response.usage,
            duration_ms=int((time.monotonic() - started) * 1000), success=not error, error_message=error,
        ),
    )
    if error:
        raise ScoringError(f"the scoring provider failed: {error}")
    return response.text
