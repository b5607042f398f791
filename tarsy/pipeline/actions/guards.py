"""Guards of approved actions (docs/investigations.md): no action on a session whose alert resolved, and at most
`actions.rate_limit.max_per_target` actions on one target within its window.

A target is what an action acts on: its server and the arguments its `target_arguments` name (e.g. namespace and
name, whichever tool), else the whole call. A proposal past either guard is refused to the agent, which reads why.
A resolution that arrives later withdraws what the session proposed and did not run, and wakes its parked
executions to be told (tarsy.services.actions withdraws; this module listens to `alert_resolved`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.utils import timezone

from tarsy.config import get_config
from tarsy.services import actions
from tarsy.signals import alert_resolved

from ..iteration_calls import Proposal, Refused
from ..parked import wake_parked


def target_of(server: str, tool: str, arguments: dict[str, Any]) -> str:
    """The rate limit's key, readable: `server {"namespace": "shop", "name": "api"}`."""
    config = get_config().mcp_servers.get(server)
    names = config.target_arguments if config is not None else None
    if names is None:
        return f"{server} {tool} {json.dumps(arguments, sort_keys=True)}"
    return f"{server} {json.dumps({n: arguments.get(n) for n in names}, sort_keys=True)}"


def proposal_check(*, session_id: Any, server: str, tool: str, arguments: dict[str, Any],
                   queued: Iterable[Proposal]) -> None:
    """Raise Refused (the agent's message) when the guards forbid proposing this call now."""
    if actions.session_alert_resolved(session_id=session_id):
        raise Refused(f"refused: {actions.ALERT_RESOLVED_REASON}, and no action is taken on a resolved alert. "
                      "Conclude without acting; report what you found.")
    limit = get_config().actions.rate_limit
    if limit is None:
        return
    target = target_of(server, tool, arguments)
    since = timezone.now() - timedelta(seconds=limit.window)
    count = actions.actions_on_target(server=server, target=target, since=since) + sum(
        1 for q in queued if q.server == server and target_of(q.server, q.tool, q.arguments) == target)
    if count >= limit.max_per_target:
        raise Refused(f"rate limit: {count} action(s) on {target} within {limit.window:.0f}s (actions.rate_limit: "
                      f"max_per_target {limit.max_per_target}). Do not act on it again now; report it for a person.")


def on_alert_resolved(sender: Any, session: Any, related: bool = False, **kwargs: Any) -> None:
    """In the resolution's transaction: the session's proposals that have not run are withdrawn, and its parked
    executions wake to be told."""
    if related:
        return
    for execution_id in actions.actions_withdraw(session_id=session.id, reason=actions.ALERT_RESOLVED_REASON):
        wake_parked(execution_id)


def connect() -> None:
    """Called once from the app's ready()."""
    alert_resolved.connect(on_alert_resolved, dispatch_uid="tarsy.actions.resolved")
