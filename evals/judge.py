"""An LLM judge for live-model evaluations (`manage.py eval --judge PROVIDER`).

Each finished run is also judged with the product's own scoring rubric (tarsy.pipeline.scoring: the same
prompt, verdict and combination with deterministic signals as the quality page), asked of PROVIDER. The judge
passes a run when its combined support is `supported`. The report shows its verdicts and how often they agree
with the deterministic one; the deterministic verdict stays the pass/fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tarsy.models import AlertSession, SessionStatus
from tarsy.pipeline.scoring import ask_scorer, deterministic_signals
from tarsy.pipeline.scoring.prompt import scoring_messages
from tarsy.pipeline.scoring.rubric import ScoringError, combine, parse_verdict
from tarsy.services import quality


@dataclass(frozen=True)
class Judgement:
    passed: bool | None  # None: the judge gave no verdict (see `error`)
    score: int | None = None
    support: str = ""
    error: str = ""

    def record(self) -> dict[str, Any]:
        return {"passed": self.passed, "score": self.score, "support": self.support, "error": self.error}


def judge(session_id: str, provider: str) -> Judgement:
    """The rubric's verdict on one finished session."""
    session = AlertSession.all_objects.get(id=session_id)
    if session.status != SessionStatus.COMPLETED or not session.final_analysis:
        return Judgement(passed=False, error=f"session is {session.status} without a final analysis")
    evidence = quality.session_evidence(session_id=session.id)
    signals = deterministic_signals(session, evidence)
    messages = scoring_messages(alert_type=session.alert_type, alert_data=session.alert_data,
                                final_analysis=session.final_analysis, results=evidence.results, signals=signals)
    try:
        verdict = parse_verdict(ask_scorer(session, messages, provider=provider))
    except ScoringError as exc:
        return Judgement(passed=None, error=str(exc))
    scored = combine(verdict, signals)
    return Judgement(passed=scored.support == "supported", score=scored.score, support=scored.support)


def agreement(pairs: list[tuple[bool, Judgement | None]]) -> dict[str, Any]:
    """Share of judged runs where the judge and the deterministic scorer agree on pass/fail."""
    judged = [(passed, j.passed) for passed, j in pairs if j is not None and j.passed is not None]
    agreed = sum(a == b for a, b in judged)
    return {"judged": len(judged), "judge_agreement": round(agreed / len(judged), 4) if judged else None}
