"""Shapes of action proposals and of a person's decision on one."""

from __future__ import annotations

from rest_framework import serializers

from tarsy.models import ACTION_MAX_COMMENT_CHARS, ActionOutcome, ActionProposal, DryRunStatus, ProposalStatus


class ActionProposalSerializer(serializers.ModelSerializer):
    session_id = serializers.UUIDField(read_only=True)
    execution_id = serializers.UUIDField(read_only=True)
    status = serializers.ChoiceField(choices=ProposalStatus.choices, read_only=True)
    dry_run_status = serializers.ChoiceField(choices=DryRunStatus.choices, read_only=True,
                                             help_text="ran: dry_run is the server's preview; failed: its error")
    outcome = serializers.ChoiceField(choices=ActionOutcome.choices, allow_blank=True, read_only=True,
                                      help_text="Empty until it ran")

    class Meta:
        model = ActionProposal
        fields = ["id", "session_id", "execution_id", "iteration", "server", "tool", "target", "arguments",
                  "justification", "expected_effect", "verify_tool", "verify_arguments", "verify_expect", "dry_run",
                  "dry_run_status", "status", "reason", "created_at", "expires_at", "decided_by", "decided_at",
                  "comment", "executed_at", "outcome", "result", "evidence"]


class ActionDecisionInSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="",
                                    max_length=ACTION_MAX_COMMENT_CHARS)


class ActionListQuerySerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=ProposalStatus.choices, required=False)
