"""The `### Actions` list written by code, not by a model: it ends an action agent's analysis and the session's
executive summary, so what was proposed, decided and run is never left to the model's wording."""

from __future__ import annotations

import json

from tarsy.models import ActionProposal, ProposalStatus


def actions_section(rows: list[ActionProposal]) -> str:
    """Each proposal, who decided and how it went ('' for none)."""
    if not rows:
        return ""
    return "### Actions\n" + "\n".join(f"- {p.server}.{p.tool} {json.dumps(p.arguments)}: {_state(p)}" for p in rows)


def _state(p: ActionProposal) -> str:
    if p.status == ProposalStatus.EXECUTED:
        return f"approved by {p.decided_by}, ran, {p.outcome}"
    if p.status == ProposalStatus.REJECTED:
        return f"rejected by {p.decided_by}"
    if p.status == ProposalStatus.WITHDRAWN:
        return f"withdrawn: {p.reason}"
    return str(p.status)
