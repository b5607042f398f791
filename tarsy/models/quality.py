"""How good an investigation was: the automatic score and the engineer's review, one of each per session."""

from __future__ import annotations

from django.db import models

from .sessions import AlertSession


class Support(models.TextChoices):
    """How far the evidence supports the conclusion; each level caps the score (tarsy.pipeline.scoring.rubric)."""

    SUPPORTED = "supported", "Supported"
    PARTLY = "partly", "Partly supported"
    UNSUPPORTED = "unsupported", "Unsupported"


# Each support level caps the score: an unsupported conclusion can never score like a supported one.
SUPPORT_BANDS: dict[str, tuple[int, int]] = {"supported": (60, 100), "partly": (35, 59), "unsupported": (0, 34)}

# The fixed vocabulary of failure tags (tarsy.pipeline.scoring.rubric), with what each means.
FAILURE_TAGS: dict[str, str] = {
    "premature_conclusion": "concluded before the evidence was gathered",
    "uncited_claim": "a finding does not point at the evidence behind it",
    "ignored_evidence": "evidence that contradicts or refines the conclusion was left out",
    "red_herring": "chased or blamed something unrelated to the cause",
    "tool_misuse": "wrong tools, wrong arguments or repeated failing calls",
    "wrong_root_cause": "the stated root cause is not what the evidence shows",
    "hallucinated_evidence": "states observations no tool returned",
    "incomplete_investigation": "stopped with obvious checks not done",
    "vague_remediation": "no concrete next step for the on-call engineer",
    # Set from deterministic signals only; the scorer may name them too.
    "invalid_citation": "cites evidence that does not exist or belongs to another session",
    "no_tool_evidence": "no tool was called: the conclusion rests on the alert alone",
    "budget_exhausted": "the iteration budget ran out and a conclusion was forced",
}


class ScoreStatus(models.TextChoices):
    PENDING = "pending"
    SCORED = "scored"
    FAILED = "failed"


class Rating(models.TextChoices):
    ACCURATE = "accurate", "Accurate"
    PARTIALLY_ACCURATE = "partially_accurate", "Partially accurate"
    INACCURATE = "inaccurate", "Inaccurate"


class SessionScore(models.Model):
    """The latest automatic score of a session: the scorer's judgement combined with deterministic signals.

    A failed scoring is kept here (status failed, `error`), never on the session: it does not change its status."""

    session = models.OneToOneField(AlertSession, on_delete=models.CASCADE, related_name="score", primary_key=True)
    status = models.CharField(max_length=10, choices=ScoreStatus.choices, default=ScoreStatus.PENDING)
    score = models.IntegerField(null=True, blank=True, db_index=True, help_text="0–100, within the support band")
    support = models.CharField(max_length=12, choices=Support.choices, blank=True, default="")
    scorer_score = models.IntegerField(null=True, blank=True, help_text="What the scorer answered, before signals")
    rationale = models.TextField(blank=True, default="")
    tags = models.JSONField(default=list, blank=True, help_text="Failure tags from the fixed vocabulary")
    signals = models.JSONField(default=dict, blank=True, help_text="Deterministic signals and what they changed")
    provider = models.CharField(max_length=200, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    error = models.TextField(blank=True, default="")
    requested_at = models.DateTimeField(auto_now_add=True)
    scored_at = models.DateTimeField(null=True, blank=True, help_text="When `score` was given")
    failed_at = models.DateTimeField(null=True, blank=True,
                                     help_text="When the latest attempt failed (`error`); a score kept is older")

    def __str__(self) -> str:
        return f"{self.score if self.score is not None else self.status} ({self.support or '-'})"


class SessionReview(models.Model):
    """An engineer's verdict on a session's analysis; saving again replaces it (the latest author is kept)."""

    session = models.OneToOneField(AlertSession, on_delete=models.CASCADE, related_name="review", primary_key=True)
    rating = models.CharField(max_length=20, choices=Rating.choices, db_index=True)
    feedback = models.TextField(blank=True, default="")
    action_taken = models.TextField(blank=True, default="")
    author = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.rating} by {self.author}"
