"""Approved actions: the proposals waiting for a person, and their approval or rejection (approvers only)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from tarsy.identity import request_author, request_groups
from tarsy.models import ProposalStatus
from tarsy.pipeline.actions.decisions import action_decide
from tarsy.services import actions

from .base import AUTH_ERRORS, JsonAPIView, errors
from .serializers.actions import ActionDecisionInSerializer, ActionListQuerySerializer, ActionProposalSerializer


class ActionListView(JsonAPIView):
    """Action proposals, newest first (at most 500); `status=pending` lists those waiting for a decision."""

    @extend_schema(parameters=[OpenApiParameter("status", str, required=False, enum=ProposalStatus.values)],
                   responses={200: ActionProposalSerializer(many=True), **errors(400, *AUTH_ERRORS)})
    def get(self, request):
        query = ActionListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        rows = actions.actions_list(status=query.validated_data.get("status"))
        return Response(ActionProposalSerializer(rows, many=True).data)


class ActionDetailView(JsonAPIView):
    """One action proposal: what would run, why, how it is verified, who decided and how it went."""

    @extend_schema(responses={200: ActionProposalSerializer, **errors(404, *AUTH_ERRORS)})
    def get(self, request, action_id):
        return Response(ActionProposalSerializer(actions.action_get(proposal_id=action_id)).data)


class _ActionDecisionView(JsonAPIView):
    approve = True

    @extend_schema(request=ActionDecisionInSerializer,
                   responses={200: ActionProposalSerializer, **errors(400, 404, 409, 415, *AUTH_ERRORS)})
    def post(self, request, action_id):
        body = ActionDecisionInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        proposal = action_decide(proposal_id=action_id, approve=self.approve, identity=request_author(request),
                                 groups=request_groups(request), comment=body.validated_data["comment"])
        return Response(ActionProposalSerializer(proposal).data)


class ActionApproveView(_ActionDecisionView):
    """Approve a pending proposal (actions.approvers only, else 403; expired or decided: 409): the agent runs it,
    verifies it and is told the outcome."""

    approve = True


class ActionRejectView(_ActionDecisionView):
    """Reject a pending proposal (actions.approvers only, else 403): the agent concludes without acting."""

    approve = False
