"""What a reflection may learn: the gates between a reflector's reply and the memory store (#43).

The reflector is a model that reads outside text (the alert, tool output), so its reply is untrusted too. A
candidate memory is kept only when every evidence id it cites is one of its session's tool results (none cited:
it rests on the alert's text alone, dropped). A kept memory waits for an engineer's review instead of going live
when its session was flagged as a suspected prompt injection or its own text reads like instructions, and one
without scope labels (it would apply to every alert of its type) until its session is reviewed accurate.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from agents.prompts.injection import injection_signals


@dataclass(frozen=True)
class Flags:
    """What of a session was flagged `suspected_injection`: the alert's signals, the flagged results' ids, and the
    timeline event types of anything else flagged (a sub-agent's answer, an action's outcome)."""

    alert: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.alert or self.evidence or self.other)

    def describe(self) -> list[str]:
        """One phrase per flagged part, for the reflector, the timeline and a held memory's reason."""
        parts = []
        if self.alert:
            parts.append(f"the alert ({', '.join(self.alert)})")
        if self.evidence:
            parts.append(f"tool result{'s' if len(self.evidence) > 1 else ''} {', '.join(self.evidence)}")
        if self.other:
            parts.append(f"other text it read ({', '.join(self.other)})")
        return parts


def evidence_problem(cited: list[str], known: Collection[str]) -> str:
    """Why a candidate citing `cited` cannot be learned from a session whose tool results hold `known` ids ("" when
    it can)."""
    if not cited:
        return "it cites no evidence id: nothing the session's tools returned supports it"
    unknown = [i for i in cited if i not in known]
    if unknown:
        return f"it cites evidence the session never had: {', '.join(unknown)}"
    return ""


UNSCOPED = ("it has no scope labels (cluster, namespace, service): it goes live, for its alert type only, once an "
            "engineer reviews its session as accurate")


def hold_reason(text: str, flags: Flags, *, scoped: bool = True) -> str:
    """Why a learned memory must wait for an engineer before it is recalled ("" when it need not); exactly
    `UNSCOPED` when its missing scope is the only reason (an accurate review of its session releases it)."""
    if not scoped and not flags and not injection_signals(text):
        return UNSCOPED
    reasons = []
    if flags:
        reasons.append(f"its session was flagged as a suspected prompt injection: {'; '.join(flags.describe())}")
    signals = injection_signals(text)
    if signals:
        reasons.append(f"its text reads like instructions to a model ({', '.join(signals)})")
    return "; ".join(reasons)
