"""Quality endpoints: re-score a session, read and save its review, the quality overview over a period."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from tarsy.identity import request_author
from tarsy.selectors.filters import SessionFilter
from tarsy.selectors.quality import overview_filter, quality_overview, related_or_none
from tarsy.services import quality
from tarsy.services import sessions as session_service

from .base import AUTH_ERRORS, JsonAPIView, errors
from .serializers.quality import (
    QualityOverviewSerializer,
    ReviewInSerializer,
    ReviewSerializer,
    ScoreAcceptedSerializer,
    SessionReviewSerializer,
)


class SessionScoreView(JsonAPIView):
    """Score the session again with the configured scoring provider (in the background)."""

    @extend_schema(request=None, responses={202: ScoreAcceptedSerializer, **errors(404, 409, *AUTH_ERRORS)})
    def post(self, request, session_id):
        quality.score_request(session_id=session_id)
        return Response({"session_id": str(session_id), "status": "pending"}, status=status.HTTP_202_ACCEPTED)


class SessionReviewView(JsonAPIView):
    """The engineer's verdict on the analysis: accurate, partially accurate or inaccurate, with notes."""

    @extend_schema(responses={200: SessionReviewSerializer, **errors(404, *AUTH_ERRORS)})
    def get(self, request, session_id):
        session = session_service.session_get(session_id=session_id)
        review = related_or_none(session, "review")
        return Response({"session_id": str(session.id), "review": ReviewSerializer(review).data if review else None})

    @extend_schema(request=ReviewInSerializer,
                   responses={200: SessionReviewSerializer, **errors(400, 404, 409, 415, *AUTH_ERRORS)})
    def post(self, request, session_id):
        body = ReviewInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        review = quality.review_save(session_id=session_id, author=request_author(request), **body.validated_data)
        return Response({"session_id": str(session_id), "review": ReviewSerializer(review).data})


class QualityView(JsonAPIView):
    """Score and review distributions per chain, agent and provider, and score–rating agreement. Takes the
    session list's filters (period: created_within, start_date, end_date; default the last 30 days)."""

    @extend_schema(parameters=[OpenApiParameter(name, str, description="As in GET /api/v1/sessions")
                               for name in SessionFilter.base_filters if name != "ordering"],
                   responses={200: QualityOverviewSerializer, **errors(400, *AUTH_ERRORS)})
    def get(self, request):
        sessions = overview_filter(request.query_params)
        if not sessions.is_valid():
            raise ValidationError(sessions.errors)
        return Response(QualityOverviewSerializer(quality_overview(sessions.qs)).data)
