"""Reads of action proposals for the dashboard: one session's, and those waiting for a person across sessions."""

from __future__ import annotations

from typing import Any

from tarsy.models import ActionProposal, ProposalStatus

PENDING_LIMIT = 200  # a page a person reads; more pending than this is an incident of its own


def session_actions(*, session_id: Any) -> list[ActionProposal]:
    """The session's proposals, oldest first."""
    return list(ActionProposal.objects.filter(session_id=session_id).select_related("execution")
                .order_by("created_at"))


def actions_pending() -> list[ActionProposal]:
    """Proposals waiting for a decision, newest first, with their sessions."""
    return list(ActionProposal.objects.filter(status=ProposalStatus.PENDING).select_related("session", "execution")
                .order_by("-created_at")[:PENDING_LIMIT])
