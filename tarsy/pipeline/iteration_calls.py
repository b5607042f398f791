"""What one iteration's in-process tool calls ask for: sub-agents to dispatch or cancel (tarsy.pipeline.sub_agents)
and actions proposed (tarsy.pipeline.actions). The tools only collect them; they are carried out when the
iteration completes, in its transaction, so an attempt that is discarded and run again does nothing twice."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from tarsy.models import DryRunStatus


class Refused(Exception):
    """A call the guardrails or the arguments refuse: the message goes back to the model as an error result."""


@dataclass
class Dispatch:
    """A sub-agent dispatched by the iteration, to be created when it completes."""

    execution_id: uuid.UUID
    agent: str
    task: str
    queued: bool


@dataclass
class Proposal:
    """An action tool call, checked, to be created as an ActionProposal when the iteration completes."""

    server: str
    tool: str
    arguments: dict[str, Any]
    justification: str
    expected_effect: str
    verify_tool: str
    verify_arguments: dict[str, Any]
    verify_expect: str
    dry_run: str = ""
    dry_run_status: str = DryRunStatus.UNSUPPORTED


@dataclass
class IterationCalls:
    """What one iteration's calls asked for (sub-agents to dispatch or cancel, actions proposed), carried out when
    the iteration completes."""

    dispatches: list[Dispatch] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)
    orchestration_calls: int = 0
    other_calls: int = 0
    orchestrator: bool = False  # the execution may dispatch (set when its tools are built)
    # Several calls per reply (native): a reply that only dispatched is done for now. ReAct makes one call per
    # reply, so after a dispatch it goes on (it may dispatch more); it waits when a reply calls nothing.
    one_call_per_reply: bool = False
    action_agent: bool = False  # an action agent: its proposals are in `proposals`
    proposals: list[Proposal] = field(default_factory=list)
