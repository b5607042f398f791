"""Shapes of the automatic score, the human review and the quality overview."""

from __future__ import annotations

from rest_framework import serializers

from tarsy.models import FAILURE_TAGS, Rating, SessionReview, SessionScore


class ScoreSerializer(serializers.ModelSerializer):
    class Meta:
        model = SessionScore
        fields = ["status", "score", "support", "scorer_score", "rationale", "tags", "signals", "provider", "model",
                  "error", "requested_at", "scored_at", "failed_at"]


class ScoreBriefSerializer(serializers.ModelSerializer):
    class Meta:
        model = SessionScore
        fields = ["status", "score", "support", "tags"]


class ReviewSerializer(serializers.ModelSerializer):
    class Meta:
        model = SessionReview
        fields = ["rating", "feedback", "action_taken", "author", "created_at", "updated_at"]


class ReviewBriefSerializer(serializers.ModelSerializer):
    class Meta:
        model = SessionReview
        fields = ["rating", "author", "updated_at"]


class ReviewInSerializer(serializers.Serializer):
    rating = serializers.ChoiceField(choices=Rating.choices)
    feedback = serializers.CharField(required=False, allow_blank=True, max_length=10_000, trim_whitespace=True)
    action_taken = serializers.CharField(required=False, allow_blank=True, max_length=10_000, trim_whitespace=True)


class ScoreAcceptedSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    status = serializers.CharField()


class SessionReviewSerializer(serializers.Serializer):
    session_id = serializers.UUIDField()
    review = ReviewSerializer(allow_null=True)


class GroupStatsSerializer(serializers.Serializer):
    name = serializers.CharField()
    sessions = serializers.IntegerField()
    scored = serializers.IntegerField()
    mean_score = serializers.FloatField(allow_null=True)
    bands = serializers.DictField(child=serializers.IntegerField())
    histogram = serializers.ListField(child=serializers.IntegerField(), help_text="Scores in ten bins of 10")
    reviews = serializers.DictField(child=serializers.IntegerField())
    tags = serializers.DictField(child=serializers.IntegerField())


class AgreementSerializer(serializers.Serializer):
    pairs = serializers.IntegerField(help_text="Sessions with both a score and a review")
    agreeing = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="Share whose score band matches the rating")
    matrix = serializers.DictField(child=serializers.DictField(child=serializers.IntegerField()),
                                   help_text="support band → rating → sessions")
    mean_score_by_rating = serializers.DictField(child=serializers.FloatField(allow_null=True))


class QualityOverviewSerializer(serializers.Serializer):
    sessions = serializers.IntegerField()
    scored = serializers.IntegerField()
    reviewed = serializers.IntegerField()
    needs_review = serializers.IntegerField()
    scoring_failed = serializers.IntegerField()
    mean_score = serializers.FloatField(allow_null=True)
    overall = GroupStatsSerializer()
    by_chain = GroupStatsSerializer(many=True)
    by_agent = GroupStatsSerializer(many=True)
    by_provider = GroupStatsSerializer(many=True)
    agreement = AgreementSerializer()
    by_day = GroupStatsSerializer(many=True, help_text="Per day of creation (UTC), oldest first")
    tag_vocabulary = serializers.SerializerMethodField()

    def get_tag_vocabulary(self, _) -> dict[str, str]:
        return FAILURE_TAGS
